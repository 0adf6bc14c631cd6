"""TRL's SFTTrainer, DPOTrainer and KTOTrainer each train two steps on their config of a real
release (the demo build shared by the suite), loaded with `datasets.load_dataset("parquet", ...)`
exactly as README.md shows, with a tiny randomly initialised Llama and a tokenizer built here:
nothing is downloaded. Needs the optional `trainers` group (torch, trl); skipped without it."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import math

import pytest

from tests.trainers.chat import CHATML_TEMPLATE, data_files, latest_release, local_tokenizer

NOT_INSTALLED = [name for name in ("torch", "trl") if importlib.util.find_spec(name) is None]
SKIP_REASON = (
    f"not installed: {', '.join(NOT_INSTALLED)}; the trainer test needs the optional `trainers` "
    "group: "
    "`.ci/install-trainers` installs it with a CPU torch from a local wheel folder, "
    "`uv sync --group trainers` from PyPI (where Linux torch is a CUDA build of several GB)"
)
pytestmark = [
    pytest.mark.slow,
    # Decided before any fixture runs, so a skip does not build the demo release first.
    pytest.mark.skipif(bool(NOT_INSTALLED), reason=SKIP_REASON),
    # TRL's own calls of transformers' renamed gradient-checkpointing API warn; not this test's
    # concern.
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

MAX_LENGTH = 1024  # TRL's default; tokens are bytes here, so long conversations are truncated


@pytest.fixture(scope="module")
def release(demo_warehouse):
    return latest_release(demo_warehouse)


@pytest.fixture
def tokenizer():
    return local_tokenizer(CHATML_TEMPLATE)


def tiny_llama(tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=MAX_LENGTH,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def load_release_config(release, name, cache_dir):
    from datasets import load_dataset

    files = data_files(release, name)
    assert "train" in files, f"the release has no {name} train split"
    return load_dataset("parquet", data_files=files, cache_dir=str(cache_dir))


def two_step_args(config_class, output_dir):
    return config_class(
        output_dir=str(output_dir),
        max_steps=2,
        per_device_train_batch_size=2,  # KTO estimates its KL term across a batch: needs 2 or more
        max_length=MAX_LENGTH,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=0,
    )


def assert_trained_two_steps(trainer):
    output = trainer.train()
    assert trainer.state.global_step == 2
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses), losses
    assert math.isfinite(output.training_loss)


@pytest.mark.parametrize(
    ("name", "trainer_name", "config_name"),
    [
        ("sft", "SFTTrainer", "SFTConfig"),
        ("preference", "DPOTrainer", "DPOConfig"),
        ("kto", "KTOTrainer", "KTOConfig"),
    ],
)
def test_trl_trainer_runs_two_steps_on_release_config(
    release, tokenizer, tmp_path, name, trainer_name, config_name
):
    trl = importlib.import_module(
        "trl"
    )  # here, not at collection: torch and TRL take seconds to import
    splits = load_release_config(release, name, tmp_path / "hf_cache")
    model = tiny_llama(tokenizer)
    # DPO and KTO would reload their reference model from the policy's hub id, which a model built
    # from a config does not have: hand them a frozen copy, the reference they would have made.
    reference = {} if name == "sft" else {"ref_model": copy.deepcopy(model)}
    trainer = getattr(trl, trainer_name)(
        model=model,
        args=two_step_args(getattr(trl, config_name), tmp_path / "out"),
        train_dataset=splits["train"],
        processing_class=tokenizer,
        **reference,
    )
    assert_trained_two_steps(trainer)
