"""docs/cli.md's reference part is what the argparse definitions generate
(execmode/cli_doc.py): a change to an option without regenerating the page fails here."""

from __future__ import annotations

from pathlib import Path

from execmode.cli import build_parser
from execmode.cli_doc import BEGIN, END, generated_part, main, render_reference

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_docs_cli_md_is_up_to_date():
    page = DOCS.read_text()
    assert generated_part(page) == render_reference(build_parser()).strip("\n"), (
        "docs/cli.md is out of date: run python -m execmode.cli_doc docs/cli.md")
    assert main(["--check", str(DOCS)]) == 0


def test_every_verb_and_option_is_in_the_page():
    parser = build_parser()
    page = generated_part(DOCS.read_text())
    for verb, sub in parser.verb_parsers.items():
        section = page.split(f"### execmode {verb}\n")[1].split("\n### ")[0]
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in section or f", {option}" in section, (verb, option)


def test_a_new_option_changes_the_reference():
    parser = build_parser()
    parser.verb_parsers["sessions"].add_argument("--oldest-first", action="store_true",
                                                 help="the other order")
    reference = render_reference(parser)
    assert "| `--oldest-first` | the other order |" in reference
    assert "--oldest-first" in reference.split("### execmode sessions")[1].split("```")[1]
    assert generated_part(DOCS.read_text()) != reference.strip("\n")


def test_the_page_is_written_around_its_hand_written_part(tmp_path):
    page = tmp_path / "cli.md"
    page.write_text("# by hand\n\nkept as written\n")
    assert main(["--check", str(page)]) == 1  # no generated part yet
    assert main([str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# by hand\n\nkept as written\n") and BEGIN in text and END in text
    assert main(["--check", str(page)]) == 0
    page.write_text(text.replace("### execmode sessions", "### execmode sesions"))
    assert main(["--check", str(page)]) == 1  # edited by hand: out of date
    assert main([str(page)]) == 0 and page.read_text() == text
