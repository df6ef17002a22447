"""Which held-out rows already decided something: rows of the training set, or rows that
pruned the model.

``U`` is unbiased because its ratios come from rows that did not choose the splits (and did
not choose which splits to keep). Held-out rows that are in part training rows, or in part
the rows a model was pruned on, bias it upwards in proportion to their share, and nothing in
the numbers says so. Two sets are compared by a 64-bit hash of each row (its feature values
and its label), the same in any container or numeric dtype:

* the training and held-out rows are both at hand: the share of held-out rows whose hash is a
  training row's is exact;
* the rows that pruned a model are gone when it is scored: the model keeps a *sketch* of them
  instead (:func:`sketch`), the :data:`SKETCH_SIZE` smallest distinct hashes. A held-out row
  whose hash is at most the sketch's largest is a pruning row exactly when the sketch holds
  its hash, and which rows fall below that bound depends on their hash alone, so the share
  among them estimates the share among all (rows shuffled, a part of them, or mixed with
  fresh ones are all recognised).

Real data with few distinct values repeat rows by chance: a fresh sample then also "shares"
rows with the training set. The share expected by chance is the share of the reference set's
own rows that repeat inside it (a held-out row matches one of ``n`` reference rows as often as
a reference row matches one of the other ``n - 1``), and only the excess over it is reported
(:attr:`Overlap.excess`).
"""

from __future__ import annotations

import base64
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

__all__ = ["SKETCH_SIZE", "Overlap", "row_hashes", "sketch", "sketch_of_counts", "overlap",
           "overlap_with_sketch", "warn_overlap", "SUMMARY_SIZE", "HashSummary",
           "summarize_hashes", "merge_summaries", "summary_sketch", "summary_overlap", "covers",
           "sketch_overlap"]

#: distinct row hashes a sketch keeps (8 bytes each)
SKETCH_SIZE = 1024
#: values converted at a time: bounds the float64 copy of a large input (32 MB)
_CHUNK_VALUES = 1 << 22
#: columns hashed at most (evenly spaced): bounds the cost on wide tables
_MOST_COLUMNS = 64
#: excess share of held-out rows that are warned of
WARN_EXCESS = 0.1
#: fewest held-out rows below a sketch's bound that estimate a share
_FEWEST_TESTED = 10
_PREFIX = "rows1"


def _holds_numbers(dtype: Any) -> bool:
    """A column that holds numbers, booleans, or categories that are numbers (compared by
    value, as their ``to_numpy()``)."""
    if isinstance(dtype, pd.CategoricalDtype):
        return _holds_numbers(dtype.categories.dtype)
    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def _numbers(values: np.ndarray) -> np.ndarray:
    """Numbers as the hosts' float32 (a float32 copy of the rows is the same rows), held in
    float64 so that they hash alike from every container."""
    # a finite value beyond float32's range is inf in a float32 copy too: hashed as that
    with np.errstate(over="ignore"):
        return values.astype(np.float32).astype(np.float64)


def _columns(n: int) -> np.ndarray:
    """The columns hashed: all, or :data:`_MOST_COLUMNS` evenly spaced ones."""
    return np.unique(np.linspace(0, n - 1, min(n, _MOST_COLUMNS)).astype(np.intp)) if n \
        else np.arange(0)


def _canonical(X: Any, start: int, stop: int, columns: np.ndarray) -> pd.DataFrame:
    """Rows ``start:stop`` of ``X``, its ``columns``, as a frame whose numbers are float32
    values (text and other categories as objects), so that equal values hash equal in any
    container."""
    if isinstance(X, pd.DataFrame):
        part = X.iloc[start:stop, columns]
        return pd.DataFrame({
            i: (_numbers(part.iloc[:, i].to_numpy(np.float64, na_value=np.nan))
                if _holds_numbers(part.dtypes.iloc[i])
                else part.iloc[:, i].astype(object).where(part.iloc[:, i].notna(), None)
                .to_numpy())
            for i in range(part.shape[1])
        })
    if sparse.issparse(X):
        return pd.DataFrame(_numbers(X[start:stop][:, columns].toarray()))
    part = np.asarray(X)[start:stop][:, columns]
    if part.dtype.kind in "biuf":
        return pd.DataFrame(_numbers(part))
    if part.dtype.kind == "O":
        try:
            return pd.DataFrame(_numbers(part.astype(np.float64)))
        except (TypeError, ValueError):  # text among the values: hashed as text
            return pd.DataFrame(part)
    return pd.DataFrame(part.astype(object))


def row_hashes(X: Any, y: Any) -> np.ndarray:
    """A 64-bit hash of each row of ``X`` with its label in ``y`` (uint64, one per row).

    Equal for the same values in a numpy array of any numeric dtype, a DataFrame (pandas'
    nullable or pyarrow-backed columns, numeric categories by value) or a scipy sparse
    matrix (absent entries are 0), and for a float32 copy of the values or the labels (the
    precision the hosts route rows in and read labels at); NaN is one value and -0.0 is 0.0.
    pandas' ``hash_pandas_object`` hashes each chunk of rows. A table of more than
    :data:`_MOST_COLUMNS` columns is hashed on that many, evenly spaced, so that the cost
    stays that of a few copies of 64 columns: rows that agree there and differ elsewhere
    hash alike, which real rows rarely do, and where they do they repeat within each set
    too, which raises the chance level with them.
    """
    labels = np.asarray(y)
    # labels too at the hosts' float32: a float32 copy of the labels is the same rows
    labels = _numbers(labels) if labels.dtype.kind in "biuf" else labels.astype(object)
    labels = labels.reshape(len(labels), -1)  # a multi-target model's: a column per target
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)  # rows sliced by chunk (no copy of a CSR matrix)
    n = np.shape(X)[0]
    columns = _columns(np.shape(X)[1])
    chunk = max(1, _CHUNK_VALUES // max(1, columns.size + labels.shape[1]))
    out = np.empty(n, dtype=np.uint64)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        frame = _canonical(X, start, stop, columns)
        width = frame.shape[1]
        for j in range(labels.shape[1]):
            frame[width + j] = labels[start:stop, j]
        out[start:stop] = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return out


def _repeated(counts: np.ndarray) -> float:
    """Share of the rows counted (``counts`` per distinct hash) whose hash another of them
    also has."""
    return float(counts[counts > 1].sum() / counts.sum()) if counts.size else 0.0


@dataclass(frozen=True)
class Overlap:
    """How many held-out rows are rows of a reference set.

    ``share``: the share of held-out rows that are reference rows (exact, or ``estimated``
    from ``tested`` rows against a sketch); ``chance``: the share a fresh sample would have, from
    the reference rows that repeat among themselves.
    """

    share: float
    chance: float
    tested: int
    estimated: bool = False

    @property
    def excess(self) -> float:
        """The share beyond chance (0 where the held-out rows share no more than chance)."""
        return max(0.0, self.share - self.chance)


def overlap(reference: np.ndarray, held_out: np.ndarray) -> Overlap:
    """The held-out rows' overlap with the reference rows, from both sets' row hashes."""
    distinct, counts = np.unique(reference, return_counts=True)
    share = float(_among(held_out, distinct).mean()) if held_out.size else 0.0
    return Overlap(share, _repeated(counts), int(held_out.size))


def _among(hashes: np.ndarray, distinct: np.ndarray) -> np.ndarray:
    """Whether each hash is in ``distinct`` (sorted): a binary search, no sort of ``hashes``."""
    if distinct.size == 0:
        return np.zeros(hashes.shape, dtype=bool)
    at = np.minimum(np.searchsorted(distinct, hashes), distinct.size - 1)
    return distinct[at] == hashes


def sketch(hashes: np.ndarray) -> str:
    """A sketch of a set of rows from their hashes: the :data:`SKETCH_SIZE` smallest distinct
    hashes, with the share of the rows they stand for that repeat (the chance level of
    :func:`overlap` for the rows the sketch can test), as text a model file can keep (about
    11 kB)."""
    return sketch_of_counts(*np.unique(hashes, return_counts=True))


def sketch_of_counts(distinct: np.ndarray, counts: np.ndarray) -> str:
    """:func:`sketch` from a set's distinct hashes (sorted) and how many rows have each: all
    of them, or at least the ``SKETCH_SIZE + 1`` smallest (rows held in partitions merge
    theirs, :func:`merge_summaries`)."""
    # the chance level of the rows the sketch can test (hashes up to its bound), not of all:
    # a common row below the bound is most of the rows tested, and repeats as often
    repeated = _repeated(counts[:SKETCH_SIZE])
    body = base64.b64encode(distinct[:SKETCH_SIZE].astype("<u8").tobytes()).decode("ascii")
    return f"{_PREFIX}:{int(distinct.size <= SKETCH_SIZE)}:{repeated:.6f}:{body}"


def _parse(text: str) -> tuple[np.ndarray, bool, float] | None:
    """A sketch's hashes, whether they are all the rows', and its chance level; None for a
    text that is not a sketch of this version's, or one of no rows."""
    parts = text.split(":") if isinstance(text, str) else []
    if len(parts) != 4 or parts[0] != _PREFIX:
        return None
    try:
        kept = np.frombuffer(base64.b64decode(parts[3], validate=True), dtype="<u8")
        # an empty sketch (no rows) says nothing either
        return (kept.astype(np.uint64), parts[1] == "1", float(parts[2])) if kept.size \
            else None
    except ValueError:  # binascii.Error is a ValueError, as a bad float or buffer size
        return None


def overlap_with_sketch(text: str, held_out: np.ndarray) -> Overlap | None:
    """The held-out rows' overlap with the rows :func:`sketch` described, or None where the
    sketch cannot be read (another version's) or too few held-out rows fall below its bound
    to estimate a share."""
    parsed = _parse(text)
    if parsed is None:
        return None
    kept, complete, chance = parsed
    tested = held_out if complete else held_out[held_out <= kept[-1]]
    if tested.size < min(_FEWEST_TESTED, held_out.size) or tested.size == 0:
        return None
    return Overlap(float(_among(tested, kept).mean()), chance, int(tested.size),
                   estimated=not complete)


def warn_overlap(found: Overlap | None, subject: str, consequence: str,
                 stacklevel: int) -> bool:
    """Warn where more than :data:`WARN_EXCESS` of the held-out rows beyond chance are rows
    that decided something (``subject``: "X_valid holds rows of X_train"); True if it
    warned."""
    if found is None or found.excess < WARN_EXCESS:
        return False
    share = f"{'about ' if found.estimated else ''}{found.share:.0%} of its rows"
    if found.chance >= 0.005:
        share += f"; {found.chance:.0%} would share them by chance, as rows repeat in this data"
    warnings.warn(f"{subject} ({share}): {consequence}", UserWarning,
                  stacklevel=stacklevel + 1)
    return True


# ---- rows held in partitions (Dask): sets compared by summaries of their hashes ---------

#: distinct hashes a summary keeps (16 bytes each: 1 MB): every hash of its set up to its
#: bound, so that two sets compare on the rows below both bounds, a sample of some hundred
#: held-out rows as long as the other set has fewer than 64 times their distinct rows
SUMMARY_SIZE = 2**16
_NO_BOUND = np.uint64(np.iinfo(np.uint64).max)


@dataclass(frozen=True)
class HashSummary:
    """A row set's smallest distinct row hashes (:func:`row_hashes`),
    sorted, with how many rows have each: all of them, or the :data:`SUMMARY_SIZE` smallest.

    Every hash of the set up to :attr:`bound` is here with its exact count: a sample of its
    distinct rows chosen by hash alone, as a sketch's. Partitions' summaries merge exactly
    (:func:`merge_summaries`): a hash among the set's smallest is among the smallest of every
    partition that holds it.
    """

    distinct: np.ndarray
    counts: np.ndarray
    n_rows: int

    @property
    def complete(self) -> bool:
        """Every distinct hash of the set is here."""
        return self.distinct.size < SUMMARY_SIZE

    @property
    def bound(self) -> np.uint64:
        """The largest hash up to which the summary holds every hash of the set."""
        return _NO_BOUND if self.complete else self.distinct[-1]


def summarize_hashes(hashes: np.ndarray) -> HashSummary:
    """One partition's :class:`HashSummary`."""
    distinct, counts = np.unique(np.asarray(hashes, dtype=np.uint64), return_counts=True)
    return HashSummary(distinct[:SUMMARY_SIZE], counts[:SUMMARY_SIZE].astype(np.int64),
                       int(np.size(hashes)))


def merge_summaries(*parts: HashSummary) -> HashSummary:
    """The :class:`HashSummary` of the rows of several partitions (or merged summaries)."""
    distinct, at = np.unique(np.concatenate([p.distinct for p in parts]), return_inverse=True)
    counts = np.zeros(distinct.size, dtype=np.int64)
    np.add.at(counts, at, np.concatenate([p.counts for p in parts]))
    return HashSummary(distinct[:SUMMARY_SIZE], counts[:SUMMARY_SIZE],
                       sum(p.n_rows for p in parts))


def summary_sketch(summary: HashSummary) -> str:
    """The set's :func:`sketch`: the same text as from all its
    hashes."""
    return sketch_of_counts(summary.distinct, summary.counts)


def _tested(held_out: HashSummary, bound: np.uint64) -> tuple[np.ndarray, int] | None:
    """The held-out summary's hashes up to ``bound`` and their rows, or None where fewer than
    :func:`overlap_with_sketch` needs."""
    below = held_out.distinct <= bound
    tested = int(held_out.counts[below].sum())
    if tested < min(_FEWEST_TESTED, held_out.n_rows) or tested == 0:
        return None
    return below, tested


def summary_overlap(reference: HashSummary, held_out: HashSummary) -> Overlap | None:
    """:func:`overlap` from the two sets' summaries: over the rows whose hashes are
    below both bounds (all rows where both summaries are complete: then the same as
    ``overlap``), the held-out rows' share among the reference rows and the chance level of
    the reference rows there. None where too few held-out rows are below the bounds."""
    bound = min(reference.bound, held_out.bound)
    found = _tested(held_out, bound)
    if found is None:
        return None
    below, tested = found
    shared = held_out.counts[below & _among(held_out.distinct, reference.distinct)].sum()
    chance = _repeated(reference.counts[reference.distinct <= bound])
    return Overlap(float(shared / tested), chance, tested, estimated=bool(bound != _NO_BOUND))


def covers(held_out: HashSummary, reference: HashSummary) -> bool:
    """Whether the held-out rows hold every reference row, from the reference hashes below
    both summaries' bounds (exact where both are complete)."""
    bound = min(held_out.bound, reference.bound)
    tested = reference.distinct[reference.distinct <= bound]
    return bool(_among(tested, held_out.distinct).all())


def sketch_overlap(text: str, held_out: HashSummary) -> Overlap | None:
    """:func:`overlap_with_sketch` from the held-out rows' summary: over the rows
    below the sketch's bound (below the summary's, where it is lower); None as there."""
    parsed = _parse(text)
    if parsed is None:
        return None
    kept, complete, chance = parsed
    bound = held_out.bound if complete else min(kept[-1], held_out.bound)
    found = _tested(held_out, bound)
    if found is None:
        return None
    below, tested = found
    shared = held_out.counts[below & _among(held_out.distinct, kept)].sum()
    return Overlap(float(shared / tested), chance, tested,
                   estimated=not (complete and held_out.complete))
