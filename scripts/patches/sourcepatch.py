"""What the patches under scripts/patches share: a source file whose every change must match
exactly once, so a patch fails loudly when upstream's source moved."""
import sys


class SourcePatch:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.src = open(path, encoding="utf-8").read()

    def replace_once(self, old, new):
        if self.src.count(old) != 1:
            sys.exit(f"{self.name} patch: expected one match for {old[:60]!r} in {self.path}")
        self.src = self.src.replace(old, new)

    def save(self):
        open(self.path, "w", encoding="utf-8").write(self.src)
