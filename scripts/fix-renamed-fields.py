#!/usr/bin/env python3
"""Renames the uses of a renamed field that the compiler reports.

Reads `go vet ./...` output on stdin and, at every "has no field or method
Scrape(s)" or "unknown field Scrape(s)", writes Snapshot(s). Run it until vet
is clean:

  for i in $(seq 40); do go vet ./... 2>&1 | python3 scripts/fix-renamed-fields.py; done
"""
import re,sys,collections
edits=collections.defaultdict(list)
for line in sys.stdin:
    m=re.match(r'^(?:vet: )?(\S+?\.go):(\d+):(\d+): .*has no field or method (Scrapes?)\b',line)
    if m:
        edits[m.group(1)].append((int(m.group(2)),int(m.group(3)),m.group(4)))
    m=re.match(r'^(?:vet: )?(\S+?\.go):(\d+):(\d+): unknown field (Scrapes?) in struct literal',line)
    if m:
        edits[m.group(1)].append((int(m.group(2)),int(m.group(3)),m.group(4)))
n=0
for f,es in edits.items():
    L=open(f).read().split('\n')
    for ln,col,name in set(es):
        l=L[ln-1]
        new={'Scrape':'Snapshot','Scrapes':'Snapshots'}[name]
        # the column points at the selector expression start; replace the first .Name or Name: at/after col
        i=col-1
        m=re.compile(r'(\.|\b)'+name+r'\b').search(l,i)
        if not m: print('??',f,ln,l); continue
        a=m.start()+(1 if m.group(1)=='.' else 0)
        L[ln-1]=l[:a]+new+l[a+len(name):]
        n+=1
    open(f,'w').write('\n'.join(L))
print(n,'edits')
