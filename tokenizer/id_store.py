"""Token ids of many words in flat numpy arrays, gathered back with vectorized indexing.

Word ``i`` owns ``flat[starts[i] : starts[i] + lengths[i]]``. Keeping ids in three arrays instead
of one tuple per word turns "concatenate the ids of these 100 000 words" into a few numpy calls.
"""

from __future__ import annotations

import numpy as np

TOKEN_DTYPE = np.int32
_INDEX_DTYPE = np.int64


def _grown(array: np.ndarray, used: int, need: int) -> np.ndarray:
    if need <= len(array):
        return array
    bigger = np.empty(max(need, 2 * len(array)), dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


class IdStore:
    """Append-only store of per-word token ids, truncatable back to an earlier size."""

    def __init__(self, *, initial_words: int = 1 << 14, initial_tokens: int = 1 << 16):
        self._flat = np.empty(initial_tokens, dtype=TOKEN_DTYPE)
        self._starts = np.empty(initial_words, dtype=_INDEX_DTYPE)
        self._lengths = np.empty(initial_words, dtype=_INDEX_DTYPE)
        self._num_words = 0
        self._num_tokens = 0

    def __len__(self) -> int:
        return self._num_words

    def append(self, ids: np.ndarray, lengths: np.ndarray) -> int:
        """Add words whose ids, concatenated, are ``ids``; return the index of the first.

        Args:
          ids: Concatenated token ids of the new words, shape (sum(lengths),).
          lengths: Number of ids of each new word, shape (num_new_words,).
        """
        first, count = self._num_words, len(lengths)
        end_tokens = self._num_tokens + len(ids)
        self._flat = _grown(self._flat, self._num_tokens, end_tokens)
        self._flat[self._num_tokens : end_tokens] = ids
        self._starts = _grown(self._starts, first, first + count)
        self._lengths = _grown(self._lengths, first, first + count)
        ends = np.cumsum(lengths)
        self._starts[first : first + count] = self._num_tokens + ends - lengths
        self._lengths[first : first + count] = lengths
        self._num_words += count
        self._num_tokens = end_tokens
        return first

    def truncate(self, num_words: int) -> None:
        """Forget every word from index ``num_words`` on."""
        if num_words < self._num_words:
            self._num_tokens = int(self._starts[num_words]) if num_words else 0
            self._num_words = num_words

    def gather(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated ids of ``words`` (indices) and the end offset of each word in them.

        Example: words 0 -> [7], 1 -> [8, 9]; ``gather([1, 0, 1])`` is
        ``([8, 9, 7, 8, 9], [2, 3, 5])``.
        """
        lengths = self._lengths[words]  # (W,)
        ends = np.cumsum(lengths)  # (W,)
        total = int(ends[-1]) if len(ends) else 0
        # Position t of the output reads flat[starts[w] + t - first_output_position_of_w].
        shift = np.repeat(self._starts[words] - (ends - lengths), lengths)  # (total,)
        shift += np.arange(total, dtype=_INDEX_DTYPE)
        return self._flat[shift], ends
