"""Shell completion as the README sets it up (click's ``_THREADLINE_COMPLETE``): the script it prints, and the
commands it completes, the lazily loaded ones included."""

from __future__ import annotations

from pathlib import Path

from ._run import run_cli


def test_the_readme_completion_line_gives_a_script_that_completes_commands(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_THREADLINE_COMPLETE=bash_source threadline)"' in readme
    script = run_cli(store_url=store_url, env={"_THREADLINE_COMPLETE": "bash_source"})
    assert script.returncode == 0, script.stderr
    assert "_threadline_completion()" in script.stdout and "complete " in script.stdout

    def complete(*words: str) -> list[str]:
        env = {
            "_THREADLINE_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(("threadline", *words)),
            "COMP_CWORD": str(len(words)),
        }
        done = run_cli(store_url=store_url, env=env)
        assert done.returncode == 0, done.stderr
        return [line.partition(",")[2] for line in done.stdout.splitlines()]

    assert complete("ke") == ["keys"]
    assert complete("logs", "") == ["delete", "fork", "list", "search", "show"]
    assert complete("models", "d") == ["default"]
