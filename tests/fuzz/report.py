"""Print the bad-input figures (tried / clean per module) as Markdown tables.

Usage (the commands that produce the JSON files are in docs/testing.md, "Bad-input fuzzing")::

    python -m tests.fuzz.report API.json [CLI.json]
"""

from __future__ import annotations

import collections
import json
import sys

OUTCOMES = ("clean", "valid", "unnamed", "crash", "hang", "nonfinite", "accepted", "mutated")


def api_table(results):
    lines = ["| module | names | cases tried | clean | " + " | ".join(OUTCOMES[2:]) + " |",
             "|---|---|---|---|" + "---|" * len(OUTCOMES[2:])]
    total = collections.Counter()
    n_names = 0
    for module, per_name in results.items():
        c = collections.Counter(r["outcome"] for rows in per_name.values() for r in rows)
        tried = sum(c.values())
        clean = c["clean"] + c["valid"]
        lines.append(f"| {module} | {len(per_name)} | {tried} | {clean} | "
                     + " | ".join(str(c[o]) for o in OUTCOMES[2:]) + " |")
        total.update(c)
        n_names += len(per_name)
    tried = sum(total.values())
    lines.append(f"| **all** | {n_names} | {tried} | {total['clean'] + total['valid']} | "
                 + " | ".join(str(total[o]) for o in OUTCOMES[2:]) + " |")
    return "\n".join(lines)


def cli_clean(row):
    err = [ln for ln in row.get("stderr", "").splitlines() if ln.strip()]
    return row["rc"] == 2 and len(err) == 1 and "Traceback" not in row["stderr"] and ": error:" in err[0]


def cli_table(results):
    lines = ["| command | runs tried | clean (exit 2, one line) |", "|---|---|---|"]
    t = c = 0
    for command, rows in results.items():
        clean = sum(cli_clean(r) for r in rows)
        lines.append(f"| algos {command} | {len(rows)} | {clean} |")
        t, c = t + len(rows), c + clean
    lines.append(f"| **all** | {t} | {c} |")
    return "\n".join(lines)


def failures(results):
    out = []
    for module, per_name in results.items():
        for name, rows in per_name.items():
            for r in rows:
                if r["outcome"] not in ("clean", "valid"):
                    out.append(f"{module} | {name} | {r['case']} | {r['outcome']}: {r['detail']}")
    return sorted(set(out))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        api = json.load(fh)
    print(api_table(api))
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as fh:
            print()
            print(cli_table(json.load(fh)))
