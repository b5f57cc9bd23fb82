#!/usr/bin/env python3
# make lint: every Swift line of the project within 120 columns (swift-format wraps code but
# cannot break string literals or comments; this catches what it leaves).
import sys,subprocess
files=subprocess.check_output(['bash','-c','find Sources Tests Fuzz/Sources -name "*.swift"']).decode().split()
n=0
for f in files:
    for i,l in enumerate(open(f,encoding='utf-8').read().split('\n'),1):
        if len(l)>120:
            n+=1
            if '-v' in sys.argv: print(f"{f}:{i}: {len(l)}")
print(n,"lines over 120 columns")
sys.exit(1 if n else 0)
