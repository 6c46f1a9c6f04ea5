"""The documentation holds together: the README is a doorway (short, its strength table generated
from the champion's card), every docs citation in the code and configs resolves to a page and a
heading that exist, no "session N" label is left anywhere, every config option is described where it
is declared, and the docs site builds with ``mkdocs build --strict`` (a broken link or a missing page
fails)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from script_helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# a citation: docs/PAGE.md, optionally followed by its heading as `, "Heading"` or ` ("Heading")`
# (in Python source the quotes may be escaped; a heading may run onto the next line of a comment)
CITATION = re.compile(r'(docs/[\w/.-]+?\.md)(?:(?:,\s*|\s+\()\\?"([^"\\]{1,120}?)\\?")?')


def tracked_files() -> list[Path]:
    """The project's files: tracked, and new ones git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ROOT / line for line in sorted(set(out.splitlines())) if (ROOT / line).is_file()]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text()
    except (UnicodeDecodeError, OSError):
        return None  # binary files (networks, images)


def normalise(heading: str) -> str:
    """A heading without its Markdown, and a cited one without the line breaks and comment markers
    it ran over."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", re.sub(r"[`*]", "", heading)).strip()


def headings(page: Path) -> list[str]:
    """The headings of a Markdown page, outside code blocks, without their markup."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(normalise(line.lstrip("#")))
    return found


def unresolved_citations(text: str) -> list[str]:
    """The citations of ``text`` whose page or heading does not exist (a cited heading is the start
    of a heading of the page: ``"Round 13 again"`` cites "Round 13 again: two rounds' positions")."""
    bad = []
    for match in CITATION.finditer(text):
        page, heading = match.group(1), match.group(2)
        path = ROOT / page
        if not path.is_file():
            bad.append(page)
        elif heading is not None and not any(h.startswith(normalise(heading)) for h in headings(path)):
            bad.append(f'{page}, "{heading}"')
    return bad


def citing_files() -> list[Path]:
    return [
        p
        for p in tracked_files()
        if p.suffix in (".py", ".yaml", ".md", ".json", ".sh", ".js")
        and (
            p.is_relative_to(ROOT / "src") or p.is_relative_to(ROOT / "scripts") or p.is_relative_to(ROOT / "reference")
        )
    ]


def test_the_citation_checker_reads_both_forms():
    assert CITATION.search('see docs/log/results.md, "Round 13 again")').groups() == (
        "docs/log/results.md",
        "Round 13 again",
    )
    assert CITATION.search('(docs/training.md ("The shipped configs"))').groups() == (
        "docs/training.md",
        "The shipped configs",
    )
    assert CITATION.search(r'"(docs/log/results.md, \"Lost Cities\")"').groups() == (
        "docs/log/results.md",
        "Lost Cities",
    )
    assert CITATION.search("docs/design.md.").groups() == ("docs/design.md", None)
    assert unresolved_citations('docs/log/results.md, "No such heading"') == ['docs/log/results.md, "No such heading"']
    assert unresolved_citations("docs/results.md") == ["docs/results.md"]  # moved to docs/log/


def test_every_docs_citation_in_the_code_and_configs_resolves():
    bad = {}
    for path in citing_files():
        text = text_of(path)
        found = unresolved_citations(text) if text else []
        if found:
            bad[path.relative_to(ROOT).as_posix()] = found
    assert bad == {}


def test_every_docs_page_cites_pages_that_exist():
    bad = {p.relative_to(ROOT).as_posix(): unresolved_citations(p.read_text()) for p in DOCS.rglob("*.md")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_no_session_labels_anywhere():
    """Records are dated by versions, dates and commits: a "session N" label means nothing to a reader."""
    label = re.compile(r"\bsessions?[ -]\d+", re.I)
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in tracked_files()
        if (text := text_of(p))
        for m in label.finditer(text)
    ]
    assert found == []


def test_the_readme_is_a_doorway():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    first_screen = "\n".join(readme.splitlines()[:60])
    for what in (
        "make setup",
        "deepcfr play",
        "deepcfr serve",
        "build-web",
        "make train",
        "make test",
        "## How strong",
    ):
        assert what in first_screen, what
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link


def test_the_strength_tables_are_the_ones_the_card_makes():
    """No figure of the champion is typed by hand: the README's and the docs' tables are what
    scripts/how_strong.py makes from card.json (run it with --write after a new card)."""
    how_strong = load_script("how_strong")
    for name, block in how_strong.tables().items():
        assert how_strong.generated_block((ROOT / name).read_text()) == block, (
            f"{name}: run scripts/how_strong.py --write"
        )
    readme_rows = [line for line in how_strong.tables()["README.md"].splitlines() if line.startswith("| ")]
    assert 2 <= len(readme_rows) - 1 <= 6  # a header and at most six rows


def test_the_shipped_configs_are_all_listed():
    from deepcfr.train.config import shipped_config_names

    listed = (ROOT / "src" / "deepcfr" / "configs" / "README.md").read_text()
    training = (DOCS / "training.md").read_text()
    assert [n for n in shipped_config_names() if n not in listed] == []
    assert [n for n in shipped_config_names() if n not in training] == []


def test_every_config_option_is_described_where_it_is_declared():
    from pydantic import BaseModel

    from deepcfr.improve import ImproveRunConfig
    from deepcfr.train.config import TrainConfig

    missing = []

    def visit(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                visit(annotation, f"{prefix}{name}.")
            elif not (field.description or "").strip():
                missing.append(prefix + name)

    visit(TrainConfig, "")
    visit(ImproveRunConfig, "improve run: ")  # its improve section and the shared ones
    assert missing == []


def test_train_options_lists_every_option_with_its_description():
    import io

    from deepcfr.cli.train_cmd import print_options
    from deepcfr.train.config import TrainConfig, config_options

    out = io.StringIO()
    print_options(out)
    text = out.getvalue()
    sections = {name: field.annotation for name, field in TrainConfig.model_fields.items()}
    keys = [f"{s}.{k}" for s, model in sections.items() if hasattr(model, "model_fields") for k in model.model_fields]
    assert [key for key, _, _ in config_options()] == keys
    for key in keys:
        assert f"\n{key} (default: " in "\n" + text, key
    assert "init.kl_temperature (default: 0.0)" in text and "regularised toward the start policy" in text


def test_improve_options_lists_every_option_with_its_description(capsys):
    from deepcfr.cli.main import main
    from deepcfr.improve import ImproveRunConfig
    from deepcfr.train.config import config_options

    assert main(["improve", "--options"]) == 0
    text = capsys.readouterr().out
    keys = [key for key, _, _ in config_options(ImproveRunConfig)]
    assert "improve.teacher" in keys and "game.name" in keys and not any(k.startswith("traversal.") for k in keys)
    for key in keys:
        assert f"\n{key} (default: " in "\n" + text, key
    assert 'improve.teacher (default: "search:learner")' in text
    assert "the base name `learner` stands for the current round's network" in " ".join(text.split())
    assert 'improve.opponents (default: ["self"])' in text


@pytest.mark.skipif(
    shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").is_file(),
    reason="mkdocs is not installed (the dev extra has it)",
)
def test_the_docs_site_builds_strictly_and_offline(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    command = [str(mkdocs) if mkdocs.is_file() else "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    pages = list((tmp_path / "site").rglob("*.html"))
    assert len(pages) >= 12
    for page in pages:  # nothing fetched from elsewhere: no script, style sheet or font from another host
        html = page.read_text()
        assert not re.search(r'<script[^>]+src="(https?:)?//', html), page
        assert not re.search(r'<link[^>]+href="(https?:)?//', html), page
