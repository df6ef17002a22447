"""LightGBM as the core loop's tree grower: one iteration from given gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters.lightgbm.bins import dataset_bins
from unbiased_criteria.adapters.lightgbm.compat import boost_one_iteration, train_scores
from unbiased_criteria.adapters.lightgbm.reader import parse_tree
from unbiased_criteria.adapters.lightgbm.router import predict_lock
from unbiased_criteria.adapters.lightgbm.source import RULES, dump_model

from unbiased_criteria.pruning import HistogramBins
from unbiased_criteria.trees import HostScores, Tree, make_tree

__all__ = ["LGBMGrower"]


def _single_leaf() -> Tree:
    return make_tree([-1], [-1], [-1], value=[0.0], rules=RULES)


class LGBMGrower:
    """A :class:`unbiased_criteria.boosting.Grower` on a LightGBM Booster.

    ``grow(grad, hess)`` hands the loop's float32 arrays ``(n, K)`` to ``Booster.update`` on a
    Booster made with ``objective='none'`` (class-major for multiclass, as LightGBM wants),
    reads the K new trees with ``dump_model(start_iteration=it, num_iteration=1)`` and the
    reader's parser, and returns them in the IR (leaf values shrunk, no init score); with
    ``read=False`` it reads nothing, and :meth:`read_grown` later reads the trees of all such
    iterations with one ``dump_model`` (each call's JSON repeats the model's header). The
    Booster's own score caches are never used: they do not see pruning.

    ``leaf_nodes(which)`` routes the raw rows of set ``which`` (0: the training rows) through
    the new iteration with ``predict(pred_leaf=True)``: the written model routes them the
    same way, so the loop's running scores are exactly what it will predict. The training rows
    need no routing: LightGBM already added each row's leaf value to its own score of the row,
    so the change of that score over the iteration names the leaf
    (:func:`unbiased_criteria.trees.leaves_from_scores`); where it cannot (two leaves of too
    close values, or a change that matches no leaf) they are routed with ``predict``. The
    Booster's scores after one iteration are its scores before the next (nothing else moves
    them): one read per iteration, into buffers reused every round, as are the change and the
    training rows' leaf ids (valid until the next ``grow``).

    When no tree of an iteration has a split, LightGBM drops the iteration; the grower then
    returns K single-leaf trees of value 0 (which add nothing).

    Parameters
    ----------
    booster : lightgbm.Booster
        Made with ``objective='none'`` on the training Dataset; it gains one iteration per call.
    data : sequence
        The raw rows of the training set (first) and of each evaluation set, as ``predict``
        accepts them; the same object twice is routed once per iteration.
    n_categories : list of int
        Categories of each feature, for ``cat_l2``
        (:func:`~unbiased_criteria.adapters.lightgbm.reader.categorical_options`).
    cat_l2 : float
    max_cat_to_onehot : int
    num_threads : int
        LightGBM's ``num_threads`` of the training: ``predict`` must use the same, or OpenMP
        switches thread teams on every call, which made each ``update`` up to 100 times slower
        on a loaded machine.
    """

    def __init__(
        self,
        booster: lightgbm.Booster,
        data: list[Any],
        *,
        n_categories: list[int],
        cat_l2: float,
        max_cat_to_onehot: int,
        num_threads: int = 0,
    ) -> None:
        self.booster = booster
        self._num_threads = int(num_threads)
        self.n_outputs = booster.num_model_per_iteration()
        self._data = list(data)
        self._categorical = dict(
            n_categories=n_categories, cat_l2=cat_l2, max_cat_to_onehot=max_cat_to_onehot
        )
        self._iteration: int | None = None  # Booster iteration of the last grown trees
        self._offsets = np.zeros(self.n_outputs, dtype=np.int32)
        self._nodes: dict[int, np.ndarray] | None = {}
        self._trees: list[Tree] = []
        self._unread: list[int | None] = []  # Booster iteration of each unread round, or None
        # LightGBM's own training scores, round to round, and the leaves their change names
        self._host = HostScores(lambda out: train_scores(self.booster, out=out))
        #: called with the round's index before each round grows (the training hook's
        #: before-iteration callbacks), or None
        self.before_round: Callable[[int], None] | None = None
        self._round = 0

    def histogram_bins(self) -> HistogramBins | None:
        """LightGBM's bins of the training rows, for the row counts ``path_smooth`` smooths
        with (:func:`unbiased_criteria.pruning.smoothing_counts`)."""
        return dataset_bins(self.booster.train_set, self._data[0])

    def grow(self, grad: np.ndarray, hess: np.ndarray, read: bool = True) -> list[Tree] | None:
        """Grow one iteration from ``(n, K)`` float32 gradients and hessians; its K trees, or
        None with ``read=False`` (:meth:`read_grown` reads them later)."""
        if self.before_round is not None:
            self.before_round(self._round)
        self._round += 1
        K = self.n_outputs
        self._nodes = {}
        self._iteration = None
        g = np.ascontiguousarray(grad if K > 1 else grad[:, 0], dtype=np.float32)
        h = np.ascontiguousarray(hess if K > 1 else hess[:, 0], dtype=np.float32)
        it = self.booster.current_iteration()
        before = self._host.before_round()
        # the Booster already has objective 'none': the step update(fobj=...) takes, directly
        boost_one_iteration(self.booster, g, h)
        self._host.after_round(before)
        added = self.booster.current_iteration() > it  # else no split: LightGBM dropped it
        if not read:
            self._unread.append(it if added else None)
            self._nodes = None  # leaf_nodes needs the iteration's trees
            return None
        if not added:
            return [_single_leaf() for _ in range(K)]
        trees = self._read(it, 1)
        self._iteration = it
        self._offsets = np.array([t.n_leaves - 1 for t in trees], dtype=np.int32)
        self._trees = trees
        return trees

    def read_grown(self) -> list[Tree]:
        """The K trees of every iteration grown with ``read=False`` since the last call, in
        order: one ``dump_model`` for all (an iteration LightGBM dropped gives K single
        leaves of value 0)."""
        unread, self._unread = self._unread, []
        kept = [it for it in unread if it is not None]  # consecutive Booster iterations
        trees = self._read(kept[0], len(kept)) if kept else []
        K = self.n_outputs
        out: list[Tree] = []
        for it in unread:
            if it is None:
                out.extend(_single_leaf() for _ in range(K))
            else:
                j = (it - kept[0]) * K
                out.extend(trees[j : j + K])
        return out

    def _read(self, start: int, count: int) -> list[Tree]:
        """The trees of Booster iterations ``start .. start + count - 1`` in the IR."""
        infos = dump_model(self.booster, start_iteration=start,
                           num_iteration=count)["tree_info"]
        if len(infos) != count * self.n_outputs:
            raise RuntimeError(f"LightGBM dumped {len(infos)} trees of {count} iterations")
        return [
            make_tree(
                **parse_tree(info, **self._categorical),
                shrinkage=float(info["shrinkage"]), rules=RULES,
            )
            for info in infos
        ]

    @property
    def leaves_from_scores(self) -> int:
        """Iterations whose training rows' leaves came from the score change (not predict)."""
        return self._host.named

    def train_scores(self) -> np.ndarray | None:
        """LightGBM's own training scores ``(n, K)`` after the last grown iteration (before
        the first, the starting scores: 0 or the Dataset's init_score), None where this
        LightGBM cannot read them; valid until the next :meth:`grow`."""
        return self._host.current()

    def _train_leaves(self) -> np.ndarray | None:
        """The training rows' leaves from the change of LightGBM's own scores, or None."""
        return self._host.leaves(self._trees, int(self._data[0].shape[0]))

    def leaf_nodes(self, which: int) -> np.ndarray:
        """IR leaf node ids ``(n_rows, K)`` of set ``which`` in the last grown iteration."""
        if self._nodes is None:
            raise RuntimeError("the last iteration was grown with read=False: no leaf ids")
        X = self._data[which]
        key = id(X)
        if key not in self._nodes:
            n = int(X.shape[0])
            found = self._train_leaves() if which == 0 and self._iteration is not None \
                else None
            if self._iteration is None:
                nodes = np.zeros((n, self.n_outputs), dtype=np.int32)
            elif found is not None:
                nodes = found
            else:
                with predict_lock(self.booster):  # not thread-safe on one Booster
                    leaves = self.booster.predict(
                        X, start_iteration=self._iteration, num_iteration=1,
                        pred_leaf=True, num_threads=self._num_threads,
                    )
                nodes = np.asarray(leaves).reshape(n, self.n_outputs) + self._offsets
            self._nodes[key] = nodes.astype(np.int32, copy=False)
        return self._nodes[key]
