"""The core loop's tree grower on an XGBoost Booster: :class:`XGBGrower`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import xgboost
from unbiased_criteria.adapters.xgboost.compat import boost_one_iteration
from unbiased_criteria.adapters.xgboost.layout import _gbtree, _outputs, _read_node_map
from unbiased_criteria.adapters.xgboost.reader import _read_tree, _train_params

from unbiased_criteria.trees import HostScores, Tree


class XGBGrower:
    """The core's :class:`~unbiased_criteria.boosting.Grower` on an XGBoost Booster.

    One ``xgboost.Booster(params, [dtrain, *eval DMatrices])`` is built once. Each
    :meth:`grow` calls ``Booster.boost`` with the core's gradients, so XGBoost grows the trees
    exactly as ``xgb.train`` would from them (its own objective is never evaluated: boosting
    with given gradients neither estimates an intercept nor reads the prediction cache), then
    reads only the new iteration's trees (``booster[it:it + 1]``, its JSON) into the IR; with
    ``read=False`` nothing, and :meth:`read_grown` later reads all such iterations from one
    slice (a slice costs about as much as reading its trees).
    :meth:`leaf_nodes` routes a DMatrix through that iteration with ``pred_leaf``, except the
    training rows: ``Booster.boost`` added each row's leaf value to XGBoost's cached margin of
    the row, so the change of that margin (``predict(dtrain, output_margin=True)``, a copy of
    the cache) names the leaf (:func:`unbiased_criteria.trees.leaves_from_scores`; where it
    cannot, ``pred_leaf`` routes them). The margins after one iteration are the margins
    before the next (nothing else moves the cache): one read per iteration, into buffers
    reused every round, as are the change and the training rows' leaf ids (valid until the
    next :meth:`grow`).

    The Booster keeps the unpruned trees; only the core's trees and running scores count.
    :meth:`start_from` gives it the model's intercept before the first round: its margins of
    the training rows then start from the loop's init score and, while no tree is pruned, are
    the loop's running scores, bit for bit (float32 sums of the same float32 leaf values;
    :meth:`train_scores`, checked by the loop before it relies on them).

    Parameters
    ----------
    params : dict
        XGBoost parameters (objective included: it sets the number of outputs).
    dtrain : xgboost.DMatrix
    evals : sequence of xgboost.DMatrix
        Routed as sets 1, 2, ... in this order.
    """

    def __init__(self, params: Mapping[str, Any], dtrain: xgboost.DMatrix,
                 evals: list[xgboost.DMatrix] | tuple = ()):
        self.booster = xgboost.Booster(dict(params), [dtrain, *evals])
        self.data = [dtrain, *evals]
        config = json.loads(self.booster.save_config())
        self.train_params = _train_params(config, None)
        #: the objective XGBoost configured from ``params`` (its choice where they name none)
        self.objective_name: str = config["learner"]["objective"]["name"]
        js = json.loads(self.booster.save_raw("json"))
        # classes or targets (a multi-target DMatrix): one tree per output and iteration
        self.n_outputs, _ = _outputs(js["learner"])
        #: eta as XGBoost multiplies leaf weights by it (float32), for the next iteration
        self.shrinkage = float(np.float32(self.train_params["eta"]))
        self._shrinkages: list[float] = []  # the eta each grown iteration was shrunk by
        self.iteration = 0
        self._part: xgboost.Booster | None = None
        self._maps: list[np.ndarray | None] = []
        self._leaves: dict[int, np.ndarray] | None = {}
        self._trees: list[Tree] = []
        self._unread_from: int | None = None  # first iteration grown and not read yet
        # XGBoost's cached margins of the training rows, round to round (float32 precision),
        # and the leaves their change names
        self._host = HostScores(self._read_margins, eps=float(np.finfo(np.float32).eps))

    def start_from(self, base_score: str) -> None:
        """Start the training rows' margins from ``base_score`` (the model JSON's text, as
        ``xgb.train`` would estimate it); only before the first round."""
        if self.iteration or self._host.started:
            raise RuntimeError("start_from must come before the first round")
        self.booster.set_param({"base_score": base_score})

    def follow_params(self) -> None:
        """Take the learning rate a training callback set on :attr:`booster` (XGBoost's
        ``LearningRateScheduler`` sets it between rounds) for the iterations grown from now
        on: a collapsed node's value is ``eta * base_weight`` with its own round's eta.

        Raises
        ------
        ValueError
            A callback changed ``lambda``, ``alpha`` or ``max_delta_step``, which fix the
            values of collapsed nodes for the whole run.
        """
        params = _train_params(json.loads(self.booster.save_config()), None)
        for key in ("lambda", "alpha", "max_delta_step"):
            if params[key] != self.train_params[key]:
                raise ValueError(
                    f"a callback changed {key} from {self.train_params[key]:g} to "
                    f"{params[key]:g} during training: the training hook follows a changing "
                    "learning rate only"
                )
        self.shrinkage = float(np.float32(params["eta"]))

    @property
    def leaves_from_scores(self) -> int:
        """Iterations whose training rows' leaves came from the margin change (not
        pred_leaf)."""
        return self._host.named

    def train_scores(self) -> np.ndarray:
        """XGBoost's own margins ``(n, K)`` (float64 holding float32 values) of the training
        rows after the last grown iteration (before the first, the starting margins); valid
        until the next :meth:`grow`."""
        return self._host.current()

    def _read_margins(self, out: np.ndarray | None) -> np.ndarray:
        """XGBoost's cached margins of the training rows, ``(n, K)`` float64, into ``out``
        when it has that shape."""
        dtrain = self.data[0]
        # the Booster's own training DMatrix: its features match (no check needed)
        margin = self.booster.predict(dtrain, output_margin=True, validate_features=False)
        margin = margin.reshape(int(dtrain.num_row()), -1)
        if out is None or out.shape != margin.shape:
            out = np.empty(margin.shape, dtype=np.float64)
        np.copyto(out, margin)
        return out

    def grow(self, grad: np.ndarray, hess: np.ndarray, read: bool = True) -> list[Tree] | None:
        """Grow one iteration from float32 ``(n, K)`` gradients; its K trees in the IR, or
        None with ``read=False`` (:meth:`read_grown` reads them later)."""
        K = self.n_outputs
        if K == 1:
            grad, hess = np.ascontiguousarray(grad[:, 0]), np.ascontiguousarray(hess[:, 0])
        it = self.iteration
        before = self._host.before_round()
        boost_one_iteration(self.booster, self.data[0], it, grad, hess)
        self._shrinkages.append(self.shrinkage)
        self.iteration += 1
        self._host.after_round(before)  # K columns checked where the leaves are read
        self._part, self._leaves, self._trees, self._maps = None, {}, [], []
        if not read:
            if self._unread_from is None:
                self._unread_from = it
            self._leaves = None  # leaf_nodes needs the iteration's trees
            return None
        part, trees_json, self._trees = self._read(it, it + 1)
        self._part = part
        self._maps = [_read_node_map(t, tree) for t, tree in zip(trees_json, self._trees)]
        return self._trees

    def read_grown(self) -> list[Tree]:
        """The K trees of every iteration grown with ``read=False`` since the last call, in
        order: one slice of the Booster and one JSON for all."""
        start, self._unread_from = self._unread_from, None
        if start is None:
            return []
        return self._read(start, self.iteration)[2]

    def _read(self, start: int, stop: int) -> tuple[xgboost.Booster, list, list[Tree]]:
        """The slice of iterations ``start .. stop - 1``, its trees' JSON and the IR trees."""
        K = self.n_outputs
        part = self.booster[start:stop]
        model, _ = _gbtree(json.loads(part.save_raw("json"))["learner"])
        trees_json = model["trees"]
        info = np.asarray(model.get("tree_info", []), dtype=np.int64).tolist()
        if info != list(range(K)) * (stop - start):
            raise ValueError(f"iterations {start}..{stop - 1} do not hold one tree per output")
        return part, trees_json, [_read_tree(t, start * K + j, self._shrinkages[start + j // K])
                                  for j, t in enumerate(trees_json)]

    def _train_leaves(self) -> np.ndarray | None:
        """The training rows' IR leaves from the change of XGBoost's margins, or None."""
        return self._host.leaves(self._trees)

    def leaf_nodes(self, which: int) -> np.ndarray:
        """IR leaf ids ``(n_rows, K)`` of the last iteration for set ``which`` (0 = train)."""
        if self._leaves is None:
            raise RuntimeError("the last iteration was grown with read=False: no leaf ids")
        dmat = self.data[which]
        key = id(dmat)
        if key not in self._leaves:  # dtrain given as an eval set is routed once
            n = int(dmat.num_row())
            ids = self._train_leaves() if which == 0 else None  # already IR ids
            if ids is None:
                ids = self._part.predict(dmat, pred_leaf=True).reshape(n, -1).astype(np.int32)
                for k, node_map in enumerate(self._maps):
                    if node_map is not None:
                        ids[:, k] = node_map[ids[:, k]]
            self._leaves[key] = ids
        return self._leaves[key]
