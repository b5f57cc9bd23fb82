#!/usr/bin/env python3
"""Word error rate: wer.py REF_TSV HYP_DIR_A HYP_DIR_B — REF_TSV has `name<TAB>reference`, each hypothesis
dir has `name.txt`. Prints one row per file and the totals (edits / reference words)."""
import re
import sys


def words(text):
    return re.sub(r"[^a-zäöüß' ]+", " ", text.lower()).split()


def edits(ref, hyp):
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)]


def main():
    refs = [line.rstrip("\n").split("\t", 1) for line in open(sys.argv[1]) if line.strip()]
    dirs = sys.argv[2:]
    totals = [0] * len(dirs)
    n = 0
    print(f"{'file':<22} {'ref words':>9} " + " ".join(f"{d.split('/')[-1]:>22}" for d in dirs))
    for name, ref in refs:
        r = words(ref)
        n += len(r)
        row = []
        for k, d in enumerate(dirs):
            try:
                hyp = words(open(f"{d}/{name}.txt").read())
            except FileNotFoundError:
                hyp = []
            e = edits(r, hyp)
            totals[k] += e
            row.append(f"{e:>3} ({' '.join(hyp)[:14]:<14})")
        print(f"{name:<22} {len(r):>9} " + " ".join(f"{c:>22}" for c in row))
    print(f"{'WER':<22} {n:>9} " + " ".join(f"{100 * t / n:>21.1f}%" for t in totals))


if __name__ == "__main__":
    main()
