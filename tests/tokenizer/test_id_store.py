import numpy as np

from tokenizer.id_store import IdStore


def _store(*words):
    store = IdStore(initial_words=1, initial_tokens=1)  # forces growth
    ids = np.array([i for word in words for i in word], dtype=np.int32)
    first = store.append(ids, np.array([len(word) for word in words]))
    return store, first


def test_gather_matches_docstring_example():
    store, first = _store([7], [8, 9])
    assert first == 0
    ids, ends = store.gather(np.array([1, 0, 1]))
    assert ids.tolist() == [8, 9, 7, 8, 9]
    assert ends.tolist() == [2, 3, 5]


def test_append_returns_the_next_index_and_truncate_forgets():
    store, _ = _store([7], [8, 9])
    assert store.append(np.array([5, 6, 4], dtype=np.int32), np.array([1, 2])) == 2
    assert len(store) == 4
    assert store.gather(np.array([3, 2]))[0].tolist() == [6, 4, 5]
    store.truncate(2)
    assert len(store) == 2
    assert store.append(np.array([1], dtype=np.int32), np.array([1])) == 2
    assert store.gather(np.array([2, 1]))[0].tolist() == [1, 8, 9]


def test_gather_of_nothing():
    store, _ = _store([7])
    ids, ends = store.gather(np.array([], dtype=np.int64))
    assert ids.tolist() == [] and ends.tolist() == []
