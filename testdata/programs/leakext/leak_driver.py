"""leak_driver: the Python side of the pyleak extension (pyleak.c).

usage: python3 leak_driver.py DIR   (DIR holds pyleak.so)
Commands on stdin, one per line: "leak MIB" calls pyleak.keep_record()
until MIB MiB are kept, and pyleak.scratch() as often (the healthy path);
"exit" ends. After each command it prints
"ready leaked=BYTES healthy_live=BYTES", as the extension counts them.
"""
import sys

sys.path.insert(0, sys.argv[1])
import pyleak  # noqa: E402

for line in sys.stdin:
    words = line.split()
    if words[:1] == ["leak"]:
        want, done = int(words[1]) << 20, 0
        while done < want:
            done += pyleak.keep_record()
            pyleak.scratch()
    elif words[:1] == ["exit"]:
        break
    leaked, healthy = pyleak.counts()
    print(f"ready leaked={leaked} healthy_live={healthy}", flush=True)
