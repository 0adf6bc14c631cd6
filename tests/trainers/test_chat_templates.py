"""Every chat row of a real release renders through strict chat templates (Llama-2 and Mistral
style, which raise on a wrong role order) with `transformers`' `apply_chat_template`, the way a
trainer renders it: sft `messages`, kto `prompt + completion`, preference `prompt + chosen` and
`prompt + rejected`. The release is the demo build shared by the suite, loaded as README.md
shows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from tests.trainers.chat import (
    LLAMA2_CHAT_TEMPLATE,
    MISTRAL_CHAT_TEMPLATE,
    data_files,
    latest_release,
    local_tokenizer,
)

if TYPE_CHECKING:  # imported where used (tests/trainers/chat.py says why)
    from datasets import Dataset

TEMPLATES = {"llama-2": LLAMA2_CHAT_TEMPLATE, "mistral": MISTRAL_CHAT_TEMPLATE}

# What a trainer renders from each chat dataset: (name, columns concatenated into one conversation).
RENDERINGS = {
    "sft": [("messages", ("messages",))],  # SFTTrainer
    "kto": [("prompt+completion", ("prompt", "completion"))],  # KTOTrainer
    "preference": [  # DPOTrainer
        ("prompt+chosen", ("prompt", "chosen")),
        ("prompt+rejected", ("prompt", "rejected")),
    ],
}


@dataclass(frozen=True)
class Failure:
    dataset: str
    split: str
    row_id: str
    rendering: str
    roles: tuple[str, ...]
    error: str

    def __str__(self) -> str:
        roles = " ".join(self.roles)
        return f"{self.dataset}/{self.split} {self.row_id} {self.rendering} [{roles}]: {self.error}"


def row_id(row: dict) -> str:
    for column in ("turn_id", "chosen_turn_id", "decision_id", "episode_id"):
        if row.get(column):
            return str(row[column])
    return "?"


def render_failures(tokenizer, dataset: str, split: str, rows: Dataset) -> list[Failure]:
    """The rows of one split whose conversations the tokenizer's chat template refuses."""
    failures = []
    for row in rows:
        for rendering, columns in RENDERINGS[dataset]:
            conversation = [message for column in columns for message in (row[column] or [])]
            try:
                tokenizer.apply_chat_template(conversation, tokenize=False)
            except Exception as error:  # noqa: BLE001 — any refusal is a row a trainer cannot use
                roles = tuple(str(message.get("role")) for message in conversation)
                failures.append(Failure(dataset, split, row_id(row), rendering, roles, str(error)))
    return failures


@pytest.fixture(scope="module")
def release_chat_rows(demo_warehouse, tmp_path_factory) -> dict[str, dict[str, Dataset]]:
    """{dataset: {split: rows}} of the demo's latest release, loaded exactly as README.md shows."""
    from datasets import load_dataset

    release = latest_release(demo_warehouse)
    cache = tmp_path_factory.mktemp("hf_datasets_cache")
    return {
        name: dict(
            load_dataset("parquet", data_files=data_files(release, name), cache_dir=str(cache))
        )
        for name in RENDERINGS
    }


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_release_chat_row_renders_through_strict_chat_template(release_chat_rows, template):
    tokenizer = local_tokenizer(TEMPLATES[template])
    failures, rendered = [], Counter()
    for dataset, splits in release_chat_rows.items():
        for split, rows in splits.items():
            failures += render_failures(tokenizer, dataset, split, rows)
            rendered[f"{dataset}/{split}"] += rows.num_rows * len(RENDERINGS[dataset])
    assert rendered.total() > 0, "the release has no chat rows to render"
    refused = Counter(f"{failure.dataset}/{failure.split}" for failure in failures)
    tally = ", ".join(f"{key} {refused[key]}/{rendered[key]}" for key in sorted(rendered))
    first = "\n".join(f"  {failure}" for failure in failures[:15])
    assert not failures, (
        f"{len(failures)} of {rendered.total()} renderings refused by the {template} template "
        f"(refused/rendered: {tally}); first:\n{first}"
    )


# The templates themselves: they must refuse what a strict trainer refuses, or the test above proves
# nothing.

SYSTEM = {"role": "system", "content": "You moderate the session."}
USER = {"role": "user", "content": "Is the plan ready?"}
ASSISTANT = {"role": "assistant", "content": "Yes, the plan is ready."}


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize(
    "conversation",
    [
        [USER, ASSISTANT],
        [SYSTEM, USER, ASSISTANT],
        [USER, ASSISTANT, USER, ASSISTANT],
        [SYSTEM, USER],
    ],
    ids=["user-assistant", "system-user-assistant", "two-exchanges", "system-user-prompt"],
)
def test_strict_template_renders_alternating_conversation(template, conversation):
    rendered = local_tokenizer(TEMPLATES[template]).apply_chat_template(
        conversation, tokenize=False
    )
    assert "[INST] " in rendered and "Is the plan ready?" in rendered


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize(
    "conversation",
    [
        [ASSISTANT, USER, ASSISTANT],
        [USER, USER, ASSISTANT],
        [USER, ASSISTANT, ASSISTANT],
        [SYSTEM, ASSISTANT],
    ],
    ids=[
        "assistant-first",
        "two-users-in-a-row",
        "two-assistants-in-a-row",
        "system-then-assistant",
    ],
)
def test_strict_template_raises_on_wrong_role_order(template, conversation):
    with pytest.raises(Exception, match="roles must alternate user/assistant"):
        local_tokenizer(TEMPLATES[template]).apply_chat_template(conversation, tokenize=False)


def test_mistral_template_raises_on_a_system_message_after_the_first():
    conversation = [
        USER,
        ASSISTANT,
        SYSTEM,
        ASSISTANT,
    ]  # Llama-2's template silently drops this system turn
    with pytest.raises(Exception, match="Only user and assistant roles"):
        local_tokenizer(MISTRAL_CHAT_TEMPLATE).apply_chat_template(conversation, tokenize=False)


def test_render_failures_counts_each_refused_rendering_of_a_preference_row():
    from datasets import Dataset

    rows = Dataset.from_list(
        [
            {"episode_id": "ok", "prompt": [USER], "chosen": [ASSISTANT], "rejected": [ASSISTANT]},
            # prompt ends with an assistant turn: both prompt+chosen and prompt+rejected repeat the
            # role
            {
                "episode_id": "bad",
                "prompt": [USER, ASSISTANT],
                "chosen": [ASSISTANT],
                "rejected": [ASSISTANT],
            },
        ]
    )
    failures = render_failures(local_tokenizer(LLAMA2_CHAT_TEMPLATE), "preference", "train", rows)
    assert [(f.row_id, f.rendering) for f in failures] == [
        ("bad", "prompt+chosen"),
        ("bad", "prompt+rejected"),
    ]
    assert failures[0].roles == ("user", "assistant", "assistant")
