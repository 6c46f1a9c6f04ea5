"""What ships with the package, in the data folder ``players/champion/`` beside this module: the
shipped champion, the strongest Lost Cities network measured, a small file with its model card
beside it (``champion/CARD.md`` for people, ``champion/card.json`` for code: the commands that made
it, the commit, the file's hash, the rules, the network shape and its measured figures), written
(``champion_card_of``, ``write_champion_card``: what scripts/make_champion.py measured) and read
here; and the value function and hand belief fitted beside it (``resolve_value_function``,
``resolve_hand_belief``). ``champion`` is a player spec like a checkpoint path (``champion@greedy``,
``search:champion``); a network replaces it only through the gate that asks everyone: not worse
head to head, a higher score against the benchmark population, no member's margin falling past its
CI (improve/gate.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "champion"
CHAMPION_FILE = HERE / "lost_cities.pt"
CARD_FILE = HERE / "card.json"
CARD_MARKDOWN_FILE = HERE / "CARD.md"
# the value function of the full state the arena's luck corrections use (deepcfr fit-value; what
# it was trained on is in its own meta, ``trained_on``)
VALUE_FILE = HERE / "lost_cities_value.pt"
HAND_BELIEF_FILE = HERE / "lost_cities_hand.pt"


def champion_file() -> Path:
    """The shipped champion checkpoint (CheckpointError when this install has none)."""
    if not CHAMPION_FILE.is_file():
        from ..checkpoints import CheckpointError

        raise CheckpointError(f"no champion is shipped with this install ({CHAMPION_FILE} is missing)")
    return CHAMPION_FILE


def champion_card() -> dict:
    """The champion's model card (card.json)."""
    return json.loads(CARD_FILE.read_text())


def champion_card_of(file: str | Path, summary: str, **fields) -> dict:
    """The model card of the champion file ``file``: its ``summary``, the file's place in the package
    and the sha256 of that same file, then ``fields`` (game, rules, network, commands, figures...)."""
    file = Path(file)
    return {
        "summary": summary,
        "file": f"src/deepcfr/players/champion/{file.name}",
        "sha256": file_sha256(file),
        **fields,
    }


def write_champion_card(card: dict, out: str | Path = HERE) -> tuple[Path, Path]:
    """Write ``card`` as ``out``/card.json (for code) and ``out``/CARD.md (for people)."""
    out = Path(out)
    written = out / CARD_FILE.name, out / CARD_MARKDOWN_FILE.name
    written[0].write_text(json.dumps(card, indent=2) + "\n")
    written[1].write_text(card_markdown(card))
    return written


def _settings_text(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "the search defaults"


def card_markdown(card: dict) -> str:
    lines = [
        f"# The champion: {card['summary']}",
        "",
        f"File `{card['file']}` (sha256 `{card['sha256']}`), {card['game']} ({card['rules_variant']} rules), "
        f"a {card['network']['hidden_size']}x{card['network']['num_layers']} network "
        f"({card['network']['input_size']} inputs, {card['network']['output_size']} actions), "
        f"distilled by {card['improve_rounds']} round(s) of expert iteration.",
        "",
        "Play it as `champion@greedy` (the network alone, its most probable move) or `search:champion` (the "
        f"search over it, with its card's settings: {_settings_text(card['search_settings'])}); plain "
        "`champion` samples from it, which is weaker.",
        "",
    ]
    population = card.get("population")
    if population:  # the headline: strength against players it was not selected against
        lines += [f"**Against the benchmark population**: {population_headline(population)}", ""]
    lines += [
        "## How it was made",
        "",
        f"Commit `{card['commit']}`, {card['date']}, on {card['machine']}:",
        "",
        "```bash",
    ]
    lines += [" ".join(c) for c in card["commands"]] + [
        "```",
        "",
        card["recipe_note"],
        "",
        "## What it measures",
        "",
        f"Paired deals (each deal in both seat orders), seed {card['eval_seed']}, 95% CIs over deal pairs.",
        "",
    ]
    lines += card_table_lines(card)
    exploit = card.get("exploitability")
    if exploit:  # measured by `deepcfr exploit` on this very file (a new file needs a new measurement)
        lines += [
            "",
            "## How exploitable",
            "",
            f"The search exploiter (`{exploit['command']}`, {exploit['games']} paired games, {exploit['device']}, "
            f"{exploit['date']}) scored {exploit['corrected_score_diff']:+.2f} +- {exploit['corrected_ci95']:.2f} "
            f"a game against `champion@greedy` (luck-corrected; plain {exploit['mean_score_diff']:+.2f} +- "
            f"{exploit['score_diff_ci95']:.2f}): its lower bound on the exploitability is "
            f"{exploit['lower_bound']:g} points a game. {exploit['note']}",
        ]
    if population:
        lines += [
            "",
            "## Against the benchmark population",
            "",
            f"`{population.get('command', 'deepcfr strength champion --population')}` (population version "
            f"{population['population_version']}, src/deepcfr/players/population.py): the network alone, greedy, "
            f"{population['games']} paired games against each member, seed {population['seed']}"
            + (", luck-corrected." if population.get("corrected") else "."),
            "",
            "| member | score diff |",
            "|---|---|",
        ]
        floors = set(population.get("floors", []))
        lines += [
            f"| `{name}`{' (floor: played, not scored)' if name in floors else ''} | {v[0]:+.1f} +- {v[1]:.1f} |"
            for name, v in population["members"].items()
        ]
        lines.append(
            f"| **population score** | **{population['population_score']:+.2f} +- {population['population_ci']:.2f}** |"
        )
        if population.get("verdict"):  # what the gate that asks everyone says of this file
            lines += ["", population["verdict"]]
    lines += [
        "",
        "A network replaces this one only if it is not worse head to head, its population score rises and "
        "no member's margin falls past its CI (`deepcfr improve`'s gate, src/deepcfr/improve/gate.py).",
        "",
    ]
    return "\n".join(lines)


def population_headline(population: dict) -> str:
    """The card's headline from its ``population`` record: the population score and the worst member."""
    return (
        f"population score {population['population_score']:+.1f} +- {population['population_ci']:.1f} a game over "
        f"{population.get('member_count', len(population['members']))} players of distinct styles "
        f"(version {population['population_version']}, "
        f"{population['games']:,} paired games each); worst member `{population['worst_member']}` "
        f"{population['worst_score_diff']:+.1f} +- {population['worst_score_diff_ci']:.1f}."
    )


def _has_corrected(card: dict) -> bool:
    return any(
        "corrected_score_diff" in f for kind in ("network", "search") for f in card["figures"][kind].values()
    ) or "corrected_score_diff" in card["figures"].get("search_vs_network", {})


def card_table_lines(card: dict) -> list[str]:
    """Every measured row of the card as a Markdown table: the network alone and the search over it
    against every opponent, and the search against the network alone (CARD.md's table, and the
    docs' "How strong" page's)."""
    corrected = _has_corrected(card)
    lines = [
        "| player | opponent | games | wins | score diff |"
        + (" corrected (luck removed) | variance ratio |" if corrected else ""),
        "|---|---|---|---|---|" + ("---|---|" if corrected else ""),
    ]
    rows = [
        (label, bot, f)
        for kind, label in (("network", "`champion@greedy`"), ("search", "`search:champion`"))
        for bot, f in card["figures"][kind].items()
    ]
    if "search_vs_network" in card["figures"]:  # what the search adds over the network alone
        rows.append(("`search:champion`", "champion@greedy", card["figures"]["search_vs_network"]))
    for label, bot, f in rows:
        line = (
            f"| {label} | `{bot}` | {f['games']} | {100 * f['win_rate']:.1f}% +- {100 * f['win_rate_ci95']:.1f} | "
            f"{f['mean_score_diff']:+.1f} +- {f['score_diff_ci95']:.1f} |"
        )
        if corrected:
            line += (
                f" {f['corrected_score_diff']:+.1f} +- {f['corrected_ci95']:.1f} | {f['variance_ratio']:.2f} |"
                if "corrected_score_diff" in f
                else " | |"
            )
        lines.append(line)
    return lines


# The README's "How strong" table, at most six rows: the population's row where the card has one,
# (the card's figures kind, opponent), then the exploiter's row where the card has one
HOW_STRONG_ROWS = (
    ("network", "heuristic_balanced"),
    ("search", "heuristic_balanced"),
    ("network", "heuristic_careful"),
    ("search_vs_network", None),
)
HOW_STRONG_PLAYERS = {
    "network": "`champion@greedy` (the network alone)",
    "search": "`search:champion` (the search over it)",
    "search_vs_network": "`search:champion` (the search over it)",
}


def _points(f: dict) -> str:
    """A row's points a game: luck-corrected where the row has it (the narrower CI), else plain."""
    if "corrected_score_diff" in f:
        return f"{f['corrected_score_diff']:+.1f} +- {f['corrected_ci95']:.1f}"
    return f"{f['mean_score_diff']:+.1f} +- {f['score_diff_ci95']:.1f} (plain)"


def how_strong_lines(card: dict) -> list[str]:
    """The short strength table of the README (at most six rows), generated from the card's data
    (``scripts/how_strong.py`` writes it; tests/test_docs.py checks the README holds what it makes)."""
    lines = ["| player | against | games | wins | points a game (luck-corrected) |", "|---|---|---|---|---|"]
    population = card.get("population")
    if population:
        lines.append(
            f"| `champion@greedy` (the network alone) | the benchmark population "
            f"({population.get('member_count', len(population['members']))} players) | "
            f"{population['games']:,} each | | "
            f"{population['population_score']:+.1f} +- "
            f"{population['population_ci']:.1f} (worst: `{population['worst_member']}` "
            f"{population['worst_score_diff']:+.1f}) |"
        )
    for kind, opponent in HOW_STRONG_ROWS:
        figures = card["figures"].get(kind)
        f = figures if opponent is None else (figures or {}).get(opponent)
        if not f:
            continue
        lines.append(
            f"| {HOW_STRONG_PLAYERS[kind]} | `{opponent or 'champion@greedy'}` | {f['games']:,} | "
            f"{100 * f['win_rate']:.1f}% +- {100 * f['win_rate_ci95']:.1f} | {_points(f)} |"
        )
    exploit = card.get("exploitability")
    if exploit:
        lines.append(
            f"| a search exploiter (`deepcfr exploit`) | `champion@greedy` | {exploit['games']:,} | | "
            f"{exploit['corrected_score_diff']:+.1f} +- {exploit['corrected_ci95']:.1f} (exploitability "
            f"found: {exploit['lower_bound']:g}) |"
        )
    lines += [
        "",
        f"Paired deals (each deal in both seat orders), 95% CIs; measured {card['date']} at commit "
        f"`{card['commit'][:7]}` on {card['machine']}.",
    ]
    return lines


def strongest_champion_spec() -> str:
    """The champion player ``deepcfr play`` and the page offer first: the search over it where its
    card shows the search beating the network alone head to head (``figures.search_vs_network``,
    the 95% CI above zero), else the network alone, greedy (issue 38: the search over round 8
    scored +3.1 +- 3.8 head to head and 62.1% against heuristic_balanced beside the network's
    64.4%, at 0.056 s a searched move)."""
    head_to_head = champion_card().get("figures", {}).get("search_vs_network") if CARD_FILE.is_file() else None
    return "search:champion" if head_to_head and search_beats_network(head_to_head) else "champion@greedy"


def search_beats_network(head_to_head: dict) -> bool:
    """Whether a head-to-head row of the search against the network alone puts its 95% CI above
    zero (the luck-corrected estimate where the row has one)."""
    key = "corrected" if "corrected_score_diff" in head_to_head else "mean"
    mean = head_to_head[f"{key}_score_diff"]
    ci = head_to_head["corrected_ci95" if key == "corrected" else "score_diff_ci95"]
    return mean - ci > 0


def champion_search_settings() -> dict:
    """The search settings measured strongest over the champion (its card's ``search_settings``),
    which ``search:champion`` starts from: over a network stronger than the bots, the network plays
    its own rollouts (docs/log/results.md, "A teacher that grows"). Inline and --search-* settings win."""
    return dict(champion_card().get("search_settings", {})) if CARD_FILE.is_file() else {}


def champion_game():
    """The game the shipped champion plays (its model card's game and rules), or None when this
    install ships no champion."""
    if not (CHAMPION_FILE.is_file() and CARD_FILE.is_file()):
        return None
    from ..games.registry import game_from_config_dict

    card = champion_card()
    return game_from_config_dict(card["game"], card["rules"])


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = [
    "champion_file",
    "champion_card",
    "champion_card_of",
    "write_champion_card",
    "card_markdown",
    "card_table_lines",
    "how_strong_lines",
    "strongest_champion_spec",
    "champion_search_settings",
    "champion_game",
    "file_sha256",
    "CHAMPION_FILE",
    "CARD_FILE",
    "CARD_MARKDOWN_FILE",
]


def export_champion(checkpoint: str | Path, out: str | Path) -> str:
    """Write the champion file ``out`` from an improvement checkpoint (a ``network`` checkpoint,
    ``deepcfr.checkpoints.export_network``); returns its sha256."""
    from ..checkpoints import export_network

    return file_sha256(export_network(checkpoint, out))


__all__ += ["export_champion"]


def shipped_value_function(game, device="cpu"):
    """The value function shipped beside the champion when it was made for ``game`` (its name,
    version and rules), else None: what ``arena``, ``eval`` and the gate correct for luck with."""
    if not VALUE_FILE.is_file():
        return None
    from ..fitted.value_fn import load_value_function

    return load_value_function(VALUE_FILE, game, device, required=False)


VALUE_CHOICES = (
    "auto (the one shipped beside the champion where it was made for the game and rules), none, "
    "or a file of `deepcfr fit-value`"
)


def resolve_value_function(choice: str | None, game, device="cpu"):
    """The value function a ``value_fn`` setting names for ``game`` (VALUE_CHOICES); None: no
    corrections (``none``, or ``auto`` where nothing shipped fits the game)."""
    if choice is None or choice == "none":
        return None
    if choice == "auto":
        return shipped_value_function(game, device)
    from ..fitted.value_fn import load_value_function

    return load_value_function(choice, game, device)


__all__ += ["shipped_value_function", "resolve_value_function", "VALUE_FILE", "VALUE_CHOICES"]


HAND_BELIEF_CHOICES = (
    "auto (the one shipped beside the champion where it was made for the game and rules) or a "
    "file of `deepcfr fit-belief`"
)


def resolve_hand_belief(choice: str, game, device="cpu"):
    """The hand belief a ``hand_belief`` setting names for ``game`` (HAND_BELIEF_CHOICES); None
    where ``auto`` finds nothing shipped for the game and rules."""
    from ..fitted.hand_belief import load_hand_belief

    if choice != "auto":
        return load_hand_belief(choice, game, device)
    return load_hand_belief(HAND_BELIEF_FILE, game, device, required=False) if HAND_BELIEF_FILE.is_file() else None


__all__ += ["resolve_hand_belief", "HAND_BELIEF_FILE", "HAND_BELIEF_CHOICES"]
