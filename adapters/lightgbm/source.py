"""A LightGBM model as the adapter sees it: routing rules, parameters, forest layout.

Host facts the whole package relies on (LightGBM 4.x, each checked by experiment):

* numeric nodes send ``x`` left iff ``x <= threshold``; categorical nodes send the categories of
  their set left and everything else, NaN and negative codes included, right;
* ``decision_type`` bits: 1 = categorical, 2 = default_left, ``(dt >> 2) & 3`` = missing type
  (0 None, 1 Zero, 2 NaN);
* with ``boost_from_average`` the init score is added to every value of the first iteration's
  trees (``Tree::AddBias``), whose ``shrinkage`` then reads 1;
* ``tree_sizes`` in the header must be right to the byte or the loader aborts the process.

IR numbering of a tree with ``L`` leaves: internal node ``i`` is LightGBM's ``split_index``
``i`` (root 0), leaf ``j`` is node ``L - 1 + j``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import lightgbm
import numpy as np
from unbiased_criteria.adapters.lightgbm.compat import (
    choose_param_value,
    dump_model_text,
    estimator_booster,
)

from unbiased_criteria.errors import InputError
from unbiased_criteria.gains import SplitScore
from unbiased_criteria.trees import DecisionRules, Forest, Tree

__all__ = [
    "RULES", "K_EPSILON", "LightGBMSource", "booster_of",
    "parse_parameters", "param_value", "make_forest", "dump_model",
]

#: LightGBM's routing: ``x <= t`` goes left, a category set goes left, NaN joins the others
RULES = DecisionRules(operator="<=", categories_go="left", categorical_nan="other",
                      tiny_is_zero=True)

#: LightGBM's kEpsilon, a float literal (``1e-15f``)
K_EPSILON = float(np.float32(1e-15))

#: values LightGBM uses for parameters a ``parameters:`` block does not print
_DEFAULTS = {
    "learning_rate": "0.1", "lambda_l1": "0", "lambda_l2": "0", "max_delta_step": "0",
    "cat_l2": "10", "max_cat_to_onehot": "4", "boost_from_average": "1", "sigmoid": "1",
    "scale_pos_weight": "1", "is_unbalance": "0", "alpha": "0.9", "fair_c": "1",
    "poisson_max_delta_step": "0.7", "tweedie_variance_power": "1.5", "boosting": "gbdt",
    "saved_feature_importance_type": "0",
}


@dataclass(frozen=True)
class LightGBMSource:
    """What the router and the writer need from the original model (``Model.source``).

    Attributes
    ----------
    text : str
        ``model_to_string(num_iteration=-1)`` of the original booster.
    params : dict of str
        The ``parameters:`` block, ``{key: value}`` as LightGBM printed them.
    objective : str or None
        LightGBM's canonical objective name; None for a custom objective.
    n_leaves : int array
        Leaves per tree; the router maps ``pred_leaf`` leaf ``j`` of tree ``t`` to IR node
        ``n_leaves[t] - 1 + j``.
    best_iteration : int
        The booster's ``best_iteration`` (what ``predict`` uses by default), kept by the writer.
    """

    text: str = field(repr=False)
    params: dict[str, str] = field(repr=False)
    objective: str | None
    n_leaves: np.ndarray = field(repr=False)
    best_iteration: int = 0

    def param(self, key: str) -> str:
        """The printed value of ``key``, else LightGBM's default, else ``""``."""
        return self.params.get(key, _DEFAULTS.get(key, ""))

    def float_param(self, key: str) -> float:
        return float(self.param(key) or 0.0)

    def flag(self, key: str) -> bool:
        """A boolean parameter (LightGBM prints them as ``1`` / ``0``)."""
        return self.param(key) in ("1", "true")

    def printed_by_lightgbm(self) -> bool:
        """Whether the parameters come from LightGBM itself: none (a dump, whose trees
        LightGBM wrote) or the whole block LightGBM prints, its seeds included; not the
        shorter block of the native grower's export or a hand-made file."""
        return not self.params or {"bagging_seed", "drop_seed"} <= self.params.keys()

    def written_before(self) -> str | None:
        """``"4.0"`` where the model was written by LightGBM 3 or older, ``"4.1"`` where by
        4.0, else None (4.1 or later, or unknown: no ``parameters:`` block as LightGBM
        prints it, a dump). Told by the header's ``version=v3`` or by the parameters each
        version added to the block it prints, ``data_sample_strategy`` in 4.0,
        ``lambdarank_position_bias_regularization`` in 4.1: the block survives a load and
        save by a later LightGBM, which rewrites the header's version."""
        if self.text.startswith("tree\nversion=v3\n"):
            return "4.0"
        # LightGBM prints every parameter, its seeds too: a shorter block (the native
        # grower's export, a hand-made file) tells no version
        if not self.params or not self.printed_by_lightgbm():
            return None
        if "data_sample_strategy" not in self.params:
            return "4.0"
        if "lambdarank_position_bias_regularization" not in self.params:
            return "4.1"
        return None

    def split_score(self) -> SplitScore:
        """The split gain's regularisation: ``lambda_l1``, ``lambda_l2``, ``max_delta_step``,
        the ``monotone_constraints`` leaf values must keep and ``path_smooth``; and the
        ``kEpsilon`` LightGBM adds to every child's hessian sum (twice to the parent's) in
        its gains and leaf values (``feature_histogram.hpp``), which decides them where the
        sums are as small (``min_sum_hessian_in_leaf=0`` with tiny weights); none for trees
        LightGBM did not grow (:meth:`printed_by_lightgbm`: the native grower's export
        values its leaves ``-G/(H + lambda)``)."""
        fp = self.float_param
        monotone = tuple(int(float(v)) for v in re.findall(
            r"-?\d+(?:\.\d*)?", self.param("monotone_constraints")))
        return SplitScore(l1=fp("lambda_l1"), l2=fp("lambda_l2"),
                          max_delta_step=fp("max_delta_step"),
                          monotone=monotone if any(monotone) else (),
                          path_smooth=fp("path_smooth"),
                          hessian_epsilon=K_EPSILON if self.printed_by_lightgbm() else 0.0)


#: what JSON must escape in a string: a backslash, a control character
_UNESCAPED = re.compile(r"[\\\x00-\x1f]")
#: the same but a newline, which LightGBM's text also writes between tokens: a text
#: without any of these has no string to escape, unless one holds a newline (then invalid)
_UNESCAPED_BUT_NEWLINE = re.compile(r"[\\\x00-\x09\x0b-\x1f]")


def dump_model(booster: lightgbm.Booster, **kwargs: Any) -> dict:
    """``booster.dump_model(**kwargs)`` (``start_iteration``, ``num_iteration``; split
    importances) with every string as LightGBM holds it.

    LightGBM writes the strings of its JSON, the feature names among them, unescaped:
    ``json.loads`` (as ``Booster.dump_model`` calls it) reads a name ``dir\\temp`` as
    ``dir<TAB>emp``, ``a\\u0041`` as ``aA``, and fails on ``x\\d`` or a tab. LightGBM refuses
    a ``"`` in a name, so every ``"`` of its text delimits a string: each string's text is
    escaped before decoding, which then gives it back verbatim.

    Raises
    ------
    InputError
        The text is still not valid JSON (a hand-edited model with a ``"`` in a name).
    """
    unknown = set(kwargs) - {"start_iteration", "num_iteration"}
    if unknown:
        raise TypeError(f"dump_model: unexpected keyword(s) {sorted(unknown)}")
    raw = dump_model_text(booster, int(kwargs.get("start_iteration", 0)),
                          int(kwargs.get("num_iteration", -1)))
    dump = None
    if not _UNESCAPED_BUT_NEWLINE.search(raw):  # the usual case: the text reads as it is
        try:
            dump = json.loads(raw)
        except json.JSONDecodeError:  # a string holds a newline: escaped below
            dump = None
    if dump is None:
        parts = raw.split('"')
        # odd parts are the strings' texts: escaped as JSON, without json.dumps's quotes
        parts[1::2] = [json.dumps(text, ensure_ascii=False)[1:-1] if _UNESCAPED.search(text)
                       else text for text in parts[1::2]]
        try:
            dump = json.loads('"'.join(parts))
        except json.JSONDecodeError as err:
            raise InputError(f"LightGBM's dump of this model is not valid JSON ({err}): a "
                             "feature name holding '\"'?") from None
    # as Booster.dump_model: the pandas categories (Python's, not LightGBM's) as plain lists
    dump["pandas_categorical"] = json.loads(json.dumps(
        getattr(booster, "pandas_categorical", None), default=_plain))
    return dump


def _plain(obj: Any) -> Any:
    """A numpy scalar or array as the Python value ``json`` writes."""
    if isinstance(obj, (np.generic, np.ndarray)):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def booster_of(model: Any, argument: str = "model") -> lightgbm.Booster:
    """The Booster of a Booster or fitted LGBMModel."""
    if isinstance(model, lightgbm.Booster):
        return model
    if isinstance(model, lightgbm.LGBMModel):
        if estimator_booster(model) is None:
            raise ValueError(f"{argument} is an unfitted {type(model).__name__}; fit it first")
        return model.booster_
    # lightgbm.cv(return_cvbooster=True): one Booster per fold, each for its own held-out fold
    hint = (": it holds one Booster per fold; pass one of its .boosters"
            if isinstance(model, lightgbm.CVBooster) else "")
    raise TypeError(
        f"{argument} must be a lightgbm.Booster or a fitted lightgbm.LGBMModel, "
        f"got {type(model).__name__}{hint}"
    )


def parse_parameters(text: str) -> dict[str, str]:
    """The ``[key: value]`` lines between ``parameters:`` and ``end of parameters``."""
    start = text.find("\nparameters:\n")
    if start < 0:
        return {}
    stop = text.find("\nend of parameters", start)
    block = text[start:stop if stop >= 0 else len(text)]
    return dict(re.findall(r"^\[([^:\]]+): ?(.*)\]$", block, flags=re.MULTILINE))


def param_value(params: dict[str, Any], name: str, default: Any = None) -> Any:
    """The value of LightGBM parameter ``name`` in a user's ``params``, through its aliases."""
    return choose_param_value(params, name, default)[name]


def make_forest(
    trees: list[Tree], K: int, n_features: int, feature_names: tuple[str, ...],
    one_iteration: bool = False,
) -> Forest:
    """LightGBM's layout in the IR: ``K`` trees per iteration (tree ``t`` is class ``t % K``),
    base score 0 (the init score is folded into the first trees), float64 scores.

    ``one_iteration``: random forest mode, where every tree is fit to the gradients at the
    init score, as the parallel trees of one iteration are."""
    n_trees = len(trees)
    iteration = np.arange(n_trees, dtype=np.int64) // K
    return Forest(
        trees=tuple(trees),
        tree_class=np.arange(n_trees, dtype=np.int64) % K,
        tree_iteration=np.zeros_like(iteration) if one_iteration else iteration,
        base_score=np.zeros(K),
        n_features=n_features,
        feature_names=tuple(feature_names),
        score_dtype=np.float64,
    )
