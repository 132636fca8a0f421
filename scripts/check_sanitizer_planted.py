"""Read the JUnit file of a run of ``conformance/sanitizer_planted.py`` under
``--gpu-sanitize`` and say whether each planted bug was caught by its tool and each
twin passed (``scripts/run_gpu_tier.sh``'s sanitizer step).

    python scripts/check_sanitizer_planted.py JUNIT_XML

Exit 0 when every bug's test failed with its tool's report and every twin passed
(skips are listed: a backend that did not probe, a tool not in the run).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

from pytest_gpucheck.conformance.sanitizer_planted import CASES


def main(path: str) -> int:
    problems: list[str] = []
    seen = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if not name.startswith("test_planted["):
            continue
        seen += 1
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, text = child.tag, (child.get("message") or "") + (child.text or "")
        key = name.removeprefix("test_planted[").removesuffix("]")
        variant = key.rsplit("-", 1)[1]
        caught = next((tool for tool, _ in CASES.values()
                       if f"compute-sanitizer ({tool})" in text), None)
        tool = next(tool for c, (tool, _) in CASES.items() if f"-{c}-" in f"-{key}")
        if outcome == "skipped":
            print(f"skip  {key}: {text.strip()[:120]}")
        elif variant == "bug" and (outcome != "failure" or caught != tool):
            problems.append(f"{key}: {tool} did not report the planted bug ({outcome})")
        elif variant == "twin" and outcome != "passed":
            problems.append(f"{key}: the correct twin {outcome}: {text.strip()[:300]}")
        else:
            print(f"ok    {key}: {'caught by ' + tool if variant == 'bug' else 'clean'}")
    for problem in problems:
        print(f"FAIL  {problem}")
    if not seen:
        print(f"FAIL  no test_planted results in {path}")
    return 1 if problems or not seen else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
