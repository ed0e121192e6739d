#!/usr/bin/python3
# The fault corpus (issue "Trust"): bad inputs and faulty plugins run through the real `ablate`
# executable. Each case asserts the documented exit code, a message naming the problem and where,
# no death by signal, no sanitizer report, and run files that h5py can read afterwards. Prints
# one summary line: cases, passed, by category. Debian's python3 (h5py) runs it.
# Usage: fault_corpus.py ABLATE FIXTURE_DIR [--long] [-k SUBSTRING]
# This file is the entry point; corpus.py holds the runner and shared checks, and the *_cases.py
# beside it the cases by category, run in the order main() calls them.
import argparse
import os
import shutil
import sys
import tempfile

from command_cases import cli_cases, plugin_fault_cases, trained_run_cases
from corpus import Corpus
from damage_cases import environment_cases, run_file_cases
from input_cases import data_file_cases, plugin_file_cases, spec_cases, spec_file_cases
from result_cases import code_cases, precision_cases, sweep_cases
from trust3_cases import trust3_cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ablate")
    ap.add_argument("fixtures")
    ap.add_argument("--long", action="store_true", help="more trials of the random cases (run by hand)")
    ap.add_argument("-k", default="", help="only cases whose category/name contains this")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ablate_faults_")
    try:
        c = Corpus(os.path.abspath(a.ablate), os.path.abspath(a.fixtures), work, a.k, a.long)
        plugin_fault_cases(c)
        cli_cases(c)
        trained_run_cases(c)
        data_file_cases(c)
        plugin_file_cases(c)
        spec_cases(c)
        spec_file_cases(c)
        sweep_cases(c)
        code_cases(c)
        precision_cases(c)
        trust3_cases(c)
        run_file_cases(c, 60 if c.long else 12)
        environment_cases(c, 20 if c.long else 3)
        ok = c.summary()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
