#!/usr/bin/env python3
# Computes the known answers that factorial_test.cpp and stats_test.cpp check Ablate's statistics
# against, with scipy and statsmodels (run once; the output known_answers.json is committed).
# Usage: python3 -m venv v && v/bin/pip install scipy statsmodels pandas && v/bin/python make_known_answers.py
import itertools
import json
import math
import os

import numpy as np
import pandas as pd
import patsy
import scipy.stats as st
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower


def factorial_case(name, levels, seeds, effects, noise, rng, blocked):
    """A full factorial over `levels` (dict factor -> levels, reference first) x seeds."""
    factors = list(levels)
    rows = []
    for cell in itertools.product(*(range(len(levels[f])) for f in factors)):
        for s in seeds:
            y = 10.0 + sum(effects.get(f, [0] * 9)[i] for f, i in zip(factors, cell))
            if len(factors) >= 2 and cell[0] == 1 and cell[1] == 1:
                y += effects.get("interaction", 0.0)
            y += noise * rng.standard_normal() + (0.3 * s if blocked else 0.0)
            rows.append({**{f: levels[f][i] for f, i in zip(factors, cell)}, "seed": str(s), "y": round(float(y), 6)})
    df = pd.DataFrame(rows)
    main = " + ".join(f"C({f}, Sum)" for f in factors)
    formula = f"y ~ ({main})**2" if len(factors) >= 2 else f"y ~ {main}"
    if blocked:
        formula += " + C(seed, Sum)"
    res = smf.ols(formula, df).fit()
    info = res.model.data.model_spec  # the patsy DesignInfo of the fitted formula

    def rows_where(**fixed):
        grid = [dict(zip(factors, combo)) for combo in itertools.product(*(levels[f] for f in factors))]
        grid = [g for g in grid if all(g[k] == v for k, v in fixed.items())]
        out = []
        for g in grid:
            for s in (seeds if blocked else seeds[:1]):
                out.append({**g, "seed": str(s), "y": 0.0})
        return np.asarray(patsy.build_design_matrices([info], pd.DataFrame(out))[0]).mean(axis=0)

    effects_out = []
    for f in factors:
        for level in levels[f][1:]:
            c = rows_where(**{f: level}) - rows_where(**{f: levels[f][0]})
            t = res.t_test(c)
            lo, hi = t.conf_int(alpha=0.05)[0]
            effects_out.append({"factor": f, "level": level, "estimate": float(t.effect[0]), "se": float(t.sd[0][0]),
                                "t": float(t.tvalue[0][0]), "p": float(t.pvalue), "ci_low": float(lo), "ci_high": float(hi)})
    aov = anova_lm(res, typ=3)
    terms = []
    for term, row in aov.iterrows():
        if term in ("Intercept", "Residual"):
            continue
        term_name = " × ".join(part.split(",")[0][2:] for part in term.split(":"))
        term_name = "seed (block)" if term_name == "seed" else term_name
        entry = {"name": term_name, "df": float(row["df"]), "sum_sq": float(row["sum_sq"]), "F": float(row["F"]),
                 "p": float(row["PR(>F)"])}
        parts = term.split(":")
        if len(parts) == 2:
            f, g = [p.split(",")[0][2:] for p in parts]
            if len(levels[f]) == 2 and len(levels[g]) == 2:
                c = ((rows_where(**{f: levels[f][1], g: levels[g][1]}) - rows_where(**{f: levels[f][0], g: levels[g][1]}))
                     - (rows_where(**{f: levels[f][1], g: levels[g][0]}) - rows_where(**{f: levels[f][0], g: levels[g][0]})))
                t = res.t_test(c)
                lo, hi = t.conf_int(alpha=0.05)[0]
                entry.update({"estimate": float(t.effect[0]), "ci_low": float(lo), "ci_high": float(hi)})
        terms.append(entry)
    return {"name": name, "factors": factors, "levels": [levels[f] for f in factors], "blocked": blocked,
            "rows": rows, "df_resid": float(res.df_resid), "residual_sd": float(math.sqrt(res.scale)),
            "main_effects": effects_out, "terms": terms}


def main():
    rng = np.random.default_rng(20261125)
    two = {"block": ["post_norm", "pre_norm"], "pe": ["sinusoidal", "learned"], "ffn": ["relu", "gelu"]}
    cases = [
        factorial_case("2x2x2, one seed", two, [1], {"block": [0, -2.0], "pe": [0, 3.0], "ffn": [0, 0.2],
                                                    "interaction": 1.0}, 0.5, rng, blocked=False),
        factorial_case("2x2x2, three seeds as blocks", two, [1, 2, 3], {"block": [0, -2.0], "pe": [0, 3.0],
                                                                        "ffn": [0, 0.2], "interaction": 1.0},
                       0.5, rng, blocked=True),
        factorial_case("3x2, two seeds, no blocks", {"lr": ["0.001", "0.003", "0.01"], "ffn": ["relu", "gelu"]}, [1, 2],
                       {"lr": [0, 1.0, -0.5], "ffn": [0, 0.7]}, 0.4, rng, blocked=False),
    ]
    a = [round(float(v), 6) for v in rng.normal(1.0, 0.3, 6)]
    b = [round(float(v), 6) for v in rng.normal(0.7, 0.3, 6)]
    welch = st.ttest_ind(a, b, equal_var=False)
    welch_ci = welch.confidence_interval(0.95)
    paired = st.ttest_rel(a, b)
    paired_ci = paired.confidence_interval(0.95)
    pvals = [0.01, 0.04, 0.03, 0.005, float("nan"), 0.5]
    finite = [p for p in pvals if not math.isnan(p)]
    holm = iter(multipletests(finite, method="holm")[1])
    holm_adj = [float("nan") if math.isnan(p) else float(next(holm)) for p in pvals]
    power = []
    for d, n in [(0.5, 10), (1.0, 5), (2.0, 3), (0.2, 50), (1.5, 2)]:
        power.append({"d": d, "n": n, "paired": False,
                      "power": float(TTestIndPower().power(effect_size=d, nobs1=n, alpha=0.05, ratio=1.0))})
        power.append({"d": d, "n": n, "paired": True,
                      "power": float(TTestPower().power(effect_size=d, nobs=n, alpha=0.05))})
    n_needed = []
    for d in [0.3, 0.8, 1.5, 3.0]:
        n_ind = TTestIndPower().solve_power(effect_size=d, power=0.8, alpha=0.05, ratio=1.0)
        n_pair = TTestPower().solve_power(effect_size=d, power=0.8, alpha=0.05)
        n_needed.append({"d": d, "paired": False, "n": int(math.ceil(n_ind))})
        n_needed.append({"d": d, "paired": True, "n": max(2, int(math.ceil(n_pair)))})
    quantiles = [{"p": p, "df": df, "t": float(st.t.ppf(p, df))} for p, df in [(0.975, 1), (0.975, 3.5), (0.9, 10), (0.025, 7)]]
    f_tails = [{"f": f, "d1": d1, "d2": d2, "p": float(st.f.sf(f, d1, d2))} for f, d1, d2 in [(4.2, 1, 1), (2.5, 2, 10), (0.3, 3, 7.5)]]
    out = {
        "generator": "make_known_answers.py (scipy " + __import__("scipy").__version__ + ", statsmodels " +
                     __import__("statsmodels").__version__ + ")",
        "factorial": cases,
        "two_sample": {"a": a, "b": b,
                       "welch": {"t": float(welch.statistic), "df": float(welch.df), "p": float(welch.pvalue),
                                 "ci_low": float(welch_ci.low), "ci_high": float(welch_ci.high)},
                       "paired": {"t": float(paired.statistic), "df": float(paired.df), "p": float(paired.pvalue),
                                  "ci_low": float(paired_ci.low), "ci_high": float(paired_ci.high)}},
        "holm": {"p": pvals, "adjusted": holm_adj},
        "power": power, "n_for_power": n_needed, "t_quantile": quantiles, "f_upper_tail": f_tails,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_answers.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, allow_nan=True)
    print("wrote", path)


if __name__ == "__main__":
    main()
