"""Paths that a request names must stay under the directories the server was started with."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class PathError(ValueError):
    """A requested path outside the served directories (or not a plain relative path)."""


def is_under(base: str | Path, path: str | Path) -> bool:
    """Whether ``path``, with every symlink followed, lies inside ``base`` (also resolved)."""
    return Path(path).resolve().is_relative_to(Path(base).resolve())


def resolve_under(base: str | Path, relative: str, what: str = "path") -> Path:
    """``base / relative``, refusing absolute paths, ``..`` parts and symlinks that lead out of
    ``base``; raises PathError (the server answers 400) or FileNotFoundError (404)."""
    if not isinstance(relative, str) or not relative.strip():
        raise PathError(f"empty {what}: give a path relative to the served directory")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or Path(relative).is_absolute() or (pure.parts and ":" in pure.parts[0]):
        raise PathError(f"{what} {relative!r} is absolute: give a path relative to the served directory")
    if ".." in pure.parts:
        raise PathError(f"{what} {relative!r} contains '..': give a path inside the served directory")
    target = Path(base) / Path(*pure.parts)
    try:
        if not is_under(base, target):
            raise PathError(f"{what} {relative!r} leads out of the served directory (a symbolic link?)")
        if not target.exists():
            raise FileNotFoundError(f"{what} {relative!r} not found")
        return target.resolve()
    except (OSError, ValueError) as e:  # a name the file system refuses (too long, a NUL byte)
        if isinstance(e, (PathError, FileNotFoundError)):
            raise
        raise PathError(f"{what} {relative[:60]!r} is not a name a file can have here") from None
