"""A CPython process that hoards freed memory in glibc malloc.

usage: malloc_target.py MIB THREADS

Allocates MIB MiB of bytes objects of 1-16 KiB (above pymalloc's 512-byte
limit, so glibc malloc serves them), then drops all but one in 32, scattered:
the survivors pin the pages, so malloc keeps most of it as free chunks.
THREADS extra threads each do the same in their own arena, then wait on an
Event (a futex). The main thread reads commands on stdin (blocked in read):
"info" prints the process' own mallinfo2() and VmRSS as one JSON line,
"more" runs another round in the main thread, "exit" exits.
"""
import ctypes
import json
import os
import random
import sys
import threading


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
kept = []


def hoard(mib, seed):
    rnd = random.Random(seed)
    blocks, total = [], 0
    while total < mib << 20:
        n = rnd.randint(1024, 16384)
        blocks.append(b"x" * n)
        total += n
    kept.extend(blocks[::32])


def info():
    m = libc.mallinfo2()
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    out = {n: getattr(m, n) for n, _ in Mallinfo2._fields_}
    out.update(pid=os.getpid(), rss_kb=rss)
    print("ready " + json.dumps(out), flush=True)


def main():
    mib, threads = int(sys.argv[1]), int(sys.argv[2])
    done, stop = [], threading.Event()
    for i in range(threads):
        def work(i=i):
            hoard(mib, 100 + i)
            done.append(i)
            stop.wait()
        threading.Thread(target=work, daemon=True).start()
    hoard(mib, 1)
    while len(done) < threads:
        threading.Event().wait(0.01)
    info()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "info":
            info()
        elif cmd == "more":
            hoard(mib, len(kept))
            info()
        elif cmd == "exit":
            break
    stop.set()


main()
