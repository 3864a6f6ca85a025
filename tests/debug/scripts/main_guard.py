import sys

import execmode as em


def main():
    x = em.arange(4).astype(em.float32)
    print("argv", sys.argv[1:], "name", __name__, "sum", float((x * 2).sum()))


if __name__ == "__main__":
    main()
