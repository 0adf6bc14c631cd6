"""A tokenizer built on the spot (no download) and strict chat templates, for rendering released
chat rows the way a trainer does, and the loading of a release exactly as README.md shows it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# tokenizers and transformers are imported where used: every pytest-xdist worker imports this
# file to collect the tests, one worker runs them (~1.5 s of CPU per worker with datasets, measured)
if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

# Llama-2-chat's template as its tokenizer_config.json ships it: one optional leading system
# message, then user/assistant strictly alternating, or it raises.
LLAMA2_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
    "{% endif %}{% endfor %}"
)

# Mistral-instruct style: one optional leading system message (folded into the first user turn),
# then strictly alternating user/assistant; any other role anywhere raises, so a second system
# message, which the Llama-2 template silently drops at an odd position, is caught here.
MISTRAL_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set system_message = messages[0]['content'] %}"
    "{% set loop_messages = messages[1:] %}{% else %}{% set system_message = '' %}"
    "{% set loop_messages = messages %}{% endif %}{{ bos_token }}"
    "{% for message in loop_messages %}"
    "{% if message['role'] not in ['user', 'assistant'] %}"
    "{{ raise_exception('Only user and assistant roles are supported after an optional leading "
    "system message') }}"
    "{% endif %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}"
    "{% endif %}{% if message['role'] == 'user' %}"
    "{% if loop.first and system_message %}{{ '[INST] ' + system_message + '\\n\\n' + "
    "message['content'] + ' [/INST]' }}"
    "{% else %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}"
    "{% else %}{{ ' ' + message['content'] | trim + eos_token }}{% endif %}{% endfor %}"
)

# Permissive ChatML (any role, any order): for the trainer test, whose subject is whether TRL
# trains on the released columns; the strict order is the chat-template test's subject.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SPECIAL_TOKENS = ["<s>", "</s>", "<unk>", "<pad>", "<|im_start|>", "<|im_end|>"]


def local_tokenizer(chat_template: str) -> PreTrainedTokenizerFast:
    """A byte-level tokenizer over the 256 byte symbols (no merges, so any text encodes and
    decodes exactly) plus special tokens, with `chat_template` set; nothing is downloaded."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: index for index, symbol in enumerate(alphabet)}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(SPECIAL_TOKENS)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def latest_release(data_root: Path) -> Path:
    return data_root / "exports" / (data_root / "exports" / "LATEST").read_text().strip()


def data_files(release: Path, dataset: str) -> dict[str, str]:
    """`{split: "<release>/<dataset>/<split>*.parquet"}` for each split the release has, the
    `data_files` mapping of README.md's `load_dataset("parquet", ...)`."""
    splits = sorted(
        {path.name.split(".")[0].split("-")[0] for path in (release / dataset).glob("*.parquet")}
    )
    return {split: f"{release}/{dataset}/{split}*.parquet" for split in splits}
