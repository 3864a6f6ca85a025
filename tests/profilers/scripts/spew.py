"""Prints argv[1] MiB of numbered 100-byte lines to stdout, then one line to stderr."""
import sys

mib = float(sys.argv[1])
lines = int(mib * 2**20) // 100
for start in range(0, lines, 1000):
    sys.stdout.write("".join(f"{i:099d}\n" for i in range(start, min(lines, start + 1000))))
print("done", file=sys.stderr)
