"""A writer process for kill tests: appends forever, printing each acknowledged index."""

from __future__ import annotations

import sys

from openbinlog import Writer


def main() -> None:
    directory, cutover_every = sys.argv[1], int(sys.argv[2])
    durability = sys.argv[3] if len(sys.argv) > 3 else "sync"
    with Writer(directory, durability=durability) as writer:  # type: ignore[arg-type]
        n = 0
        while True:
            ref = writer.append(f"record-{n}".encode() * (1 + n % 7))
            sys.stdout.write(f"{ref.index}\n")
            sys.stdout.flush()
            n += 1
            if cutover_every and n % cutover_every == 0:
                writer.cutover()


if __name__ == "__main__":
    main()
