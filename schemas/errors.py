"""Errors about datasets, shared by every reader of the format."""

from __future__ import annotations

from common.errors import PilepackError


class ManifestError(PilepackError, ValueError):
    """A manifest that is missing, malformed, of an unknown version, inconsistent, or unsafe."""
