"""Ends the way its first argument says: ok, exit N, raise, message."""

import sys

import execmode as em


def fail():
    x = em.ones(3)
    raise ValueError(f"bad value {float(em.sum(x))}")


if __name__ == "__main__":
    how = sys.argv[1] if len(sys.argv) > 1 else "ok"
    print("argv", sys.argv[1:])
    if how == "exit":
        sys.exit(int(sys.argv[2]))
    if how == "raise":
        fail()
    if how == "message":
        sys.exit("stopping with a message")
    print("done")
