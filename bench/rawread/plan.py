"""Writes rawread's plan from `strace -f -qq -y -e trace=openat,open,read,pread64,getdents64`
of one memdoctor run: each file it opened, once, with what it read there.

usage: plan.py TRACE MEMDOCTOR_PID > PLAN      (see rawread.c for the format)
Also prints to standard error how many files the run opened more than once.
"""
import re
import sys

trace, mdpid = sys.argv[1], sys.argv[2]
opened = re.compile(r'^\d+\s+open(?:at)?\(.*\)\s+= \d+<(.*)>$')
io = re.compile(r'^\d+\s+(read|getdents64)\(\d+<(.*?)>, .*\)\s+= (\d+)$')
pio = re.compile(r'^\d+\s+pread64\(\d+<(.*?)>, .*, (\d+)\)\s+= (\d+)$')


def joined(f):
    """The trace's lines, a call that two threads' calls interrupted
    ("... <unfinished ...>", then "<... NAME resumed>...") made one line."""
    pending = {}
    for line in f:
        line = line.rstrip('\n')
        pid, _, rest = line.partition(' ')
        if line.endswith(' <unfinished ...>'):
            pending[pid] = line[:-len(' <unfinished ...>')]
            continue
        r = rest.lstrip()
        if r.startswith('<... ') and ' resumed>' in r:
            line = pending.pop(pid, pid + ' ?(') + r.split(' resumed>', 1)[1]
        yield line


order, kind, seq, cur, preads, opens = [], {}, {}, {}, {}, {}
own = '/proc/%s/' % mdpid
for line in joined(open(trace, errors='replace')):
    m = opened.match(line)
    if m:
        p = m.group(1)
        opens[p] = opens.get(p, 0) + 1
        cur[p] = 0
        if p not in kind:
            order.append(p)
            kind[p] = 'D' if 'O_DIRECTORY' in line else 'S'
            seq[p], preads[p] = 0, set()
        continue
    m = io.match(line)
    if m and m.group(2) in kind:
        if m.group(1) == 'getdents64':
            kind[m.group(2)] = 'D'
        else:
            p = m.group(2)
            cur[p] += int(m.group(3))
            seq[p] = max(seq[p], cur[p])
        continue
    m = pio.match(line)
    if m and m.group(1) in kind and int(m.group(3)) > 0:
        preads[m.group(1)].add((int(m.group(2)), int(m.group(3))))
twice = [p for p in order if opens[p] > 1]
print('%d files opened, %d of them more than once' % (len(order), len(twice)), file=sys.stderr)
for p in twice:
    print('  opened %d times: %s' % (opens[p], p), file=sys.stderr)
for p in order:
    name = p.replace(own, '/proc/self/', 1) if p.startswith(own) else p
    if name.startswith('/proc/self/task/'):
        continue
    print('%s\t0\t%d\t%s' % (kind[p], seq[p], name))
    for off, n in sorted(preads[p]):
        print('P\t%d\t%d\t%s' % (off, n, name))
