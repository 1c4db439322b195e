#!/usr/bin/env python3
"""Writes the hostile-input corpus beside this script.

Each file is an input a host, a target process or a peer could hand
memdoctor: values the kernel never writes, files cut short, bytes that are
not text, escape sequences for the operator's terminal, numbers that
overflow. TestHostileCorpus (cmd/memdoctor) feeds every file to the
commands that read its kind; the fuzz targets take them as seeds.
Re-run after editing: python3 testdata/hostile/make.py
"""
import gzip
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"

MEMINFO_OK = """MemTotal:       24576000 kB
MemFree:        20000000 kB
MemAvailable:   22000000 kB
Buffers:           10000 kB
Cached:          1000000 kB
SwapCached:            0 kB
Active:           500000 kB
Inactive:         600000 kB
AnonPages:        400000 kB
Mapped:           100000 kB
Shmem:             10000 kB
Slab:             200000 kB
SReclaimable:     100000 kB
SUnreclaim:       100000 kB
KernelStack:       10000 kB
PageTables:        10000 kB
SwapTotal:             0 kB
SwapFree:              0 kB
"""


def meminfo(**over):
    out = []
    for line in MEMINFO_OK.splitlines():
        k = line.split(":")[0]
        if k in over:
            v = over[k]
            if v is None:
                continue
            out.append(f"{k}:{v}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


FILES = {
    # proc/<name>/<variant>: replaces that file of a real capture.
    "proc/meminfo/negative": meminfo(MemTotal="       -5 kB"),
    "proc/meminfo/overflow": meminfo(MemTotal=" 18446744073709551615 kB"),
    "proc/meminfo/int64-kb-overflow": meminfo(MemTotal=" 9223372036854775807 kB"),
    "proc/meminfo/zero-total": meminfo(MemTotal="        0 kB"),
    "proc/meminfo/no-total": meminfo(MemTotal=None),
    "proc/meminfo/no-available": meminfo(MemAvailable=None),
    "proc/meminfo/available-above-total": meminfo(MemAvailable="   99999999 kB"),
    "proc/meminfo/nan": meminfo(MemFree="      NaN kB"),
    "proc/meminfo/float": meminfo(MemFree="  1.5e300 kB"),
    "proc/meminfo/duplicate-keys": MEMINFO_OK + "MemTotal:        1 kB\n",
    "proc/meminfo/crlf": MEMINFO_OK.replace("\n", "\r\n"),
    "proc/meminfo/no-unit": MEMINFO_OK.replace(" kB", ""),
    "proc/meminfo/escape-key": MEMINFO_OK + ESC + "Evil:  1 kB\n",
    "proc/vmstat/negative": "nr_free_pages -1\noom_kill -7\npgscan_direct 18446744073709551615\n",
    "proc/vmstat/words": "nr_free_pages many\noom_kill \npgsteal_kswapd 1 2 3\n",
    "proc/zoneinfo/no-zones": "Node 0, zone\n  pages free\n",
    "proc/zoneinfo/huge": "Node 0, zone   Normal\n  pages free     18446744073709551615\n        min      -3\n        low      99999999999999999999\n        high     1\n        spanned  0\n        present  0\n        managed  0\n",
    "proc/zoneinfo/deep-node": "Node 4294967296, zone   DMA\n  pages free 1\n",
    "proc/slabinfo/bad-header": "slabinfo - version: 9.9\n# name <active_objs>\nkmalloc-64 1 2\n",
    "proc/slabinfo/negative": "slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\nkmalloc-64 -1 -1 -64 -1 -1 : tunables 0 0 0 : slabdata -1 -1 0\n",
    "proc/slabinfo/escape-name": "slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n" + ESC + "kmalloc 100 100 4096 8 8 : tunables 0 0 0 : slabdata 12 12 0\n",
    "proc/buddyinfo/short": "Node 0, zone Normal 1 2\n",
    "proc/cgroups/negative": "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t3\t-5\t1\n",
    "proc/cgroups/huge": "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t3\t99999999999999999999\t1\n",
    "proc/stat/garbage": "cpu  x y z\nbtime never\n",
    "proc/pressure/memory/bad": "some avg10=NaN avg60=-1 avg300=1e999 total=-5\nfull avg10=x\n",
    "proc/1/status/escape-name": "Name:\t" + ESC + "evil\nState:\tS (sleeping)\nPid:\t1\nPPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nVmRSS:\t  18446744073709551615 kB\nRssAnon:\t -4 kB\nThreads:\t-1\n",
    "proc/1/status/no-uid": "Name:\tx\nState:\tS (sleeping)\n",
    # openmetrics/: ingested by diagnose, report, export and compare.
    "openmetrics/only-memtotal.prom": "# TYPE node_memory_MemTotal_bytes gauge\nnode_memory_MemTotal_bytes{instance=\"h1\"} 8589934592 1700000000000\n# EOF\n",
    "openmetrics/nan-inf.prom": "".join(
        f"node_memory_MemAvailable_bytes{{instance=\"h1\"}} {v} {1700000000000 + i * 15000}\nnode_memory_MemTotal_bytes{{instance=\"h1\"}} 8589934592 {1700000000000 + i * 15000}\n"
        for i, v in enumerate(["NaN", "+Inf", "-Inf", "1e308", "-1", "4294967296", "NaN", "+Inf"])
    ),
    "openmetrics/escape-labels.prom": "".join(
        f"node_memory_MemTotal_bytes{{instance=\"{ESC}h1\",job=\"\\x1b[2J\"}} 8589934592 {1700000000000 + i * 15000}\nnode_memory_MemAvailable_bytes{{instance=\"{ESC}h1\",job=\"\\x1b[2J\"}} 1000 {1700000000000 + i * 15000}\n"
        for i in range(8)
    ),
    "openmetrics/time-travel.prom": "node_memory_MemTotal_bytes{instance=\"h1\"} 1 9999999999999999\nnode_memory_MemTotal_bytes{instance=\"h1\"} 1 -5\nnode_memory_MemTotal_bytes{instance=\"h1\"} 1 0\nnode_memory_MemTotal_bytes{instance=\"h1\"} 1 1700000000000\nnode_memory_MemTotal_bytes{instance=\"h1\"} 2 1700000000000\n",
    "openmetrics/unterminated.prom": "node_memory_MemTotal_bytes{instance=\"h1 8589934592\n",
    "openmetrics/help-only.prom": "# HELP node_memory_MemTotal_bytes x\n# TYPE node_memory_MemTotal_bytes gauge\n",
    "openmetrics/binary.prom": b"node_memory_MemTotal_bytes \x00\x01\x02\xff\xfe 1\n",
    "openmetrics/many-labels.prom": "node_memory_MemTotal_bytes{" + ",".join(f"l{i}=\"v\"" for i in range(2000)) + "} 1 1700000000000\n",
    # Duplicate samples: one series at one time repeated (a small cut of the
    # gigabyte bomb TestDuplicateSampleBombFile makes), repeats interleaved
    # with another series, and a series alternating between two times (not
    # in time order: held, then compacted).
    "openmetrics/duplicate-samples.prom": "node_memory_MemTotal_bytes{instance=\"h1\"} 8589934592 1700000000\n" * 1000,
    "openmetrics/duplicate-interleaved.prom": "".join(
        f"node_memory_MemTotal_bytes{{instance=\"h1\"}} {8589934592 + i} 1700000000\nnode_memory_MemAvailable_bytes{{instance=\"h1\"}} 1000 1700000000\n"
        for i in range(500)
    ),
    "openmetrics/duplicate-alternating.prom": "".join(
        f"node_memory_MemTotal_bytes{{instance=\"h1\"}} 8589934592 {1700000000 + (i % 2) * 15}\n" for i in range(1000)
    ),
    # A gzip bomb in miniature: 8 MiB of one sample in 8 KiB (the gigabyte
    # one is refused as it expands; this one is read, as one sample).
    "openmetrics/duplicate-samples.om.gz": gzip.compress(b"m 1 1700000000\n" * (8 << 20 >> 4), compresslevel=9, mtime=0),
    # prometheus/: answers of the Prometheus HTTP API, seeds of FuzzAnswer.
    "prometheus/repeated-point.json": '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":['
    + '[1700000000,"1"],' * 1000 + '[1700000000,"2"]]}]}}',
    "prometheus/repeated-series.json": '{"status":"success","data":{"resultType":"vector","result":['
    + '{"metric":{"instance":"h1"},"value":[1700000000,"1"]},' * 1000 + '{"metric":{"instance":"h1"},"value":[1700000000,"2"]}]}}',
    "prometheus/points-out-of-order.json": '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":[[1700000060,"1"],[1700000000,"2"],[1700000060,"3"],[1700000120,"4"]]}]}}',
    "prometheus/values-before-metric.json": '{"status":"success","data":{"result":[{"values":[[1700000000,"1"],[1700000000,"2"]],"metric":{"instance":"h1"}}],"resultType":"matrix"}}',
    "prometheus/deep-extra.json": '{"status":"success","stats":' + "[" * 100000 + "]" * 100000 + ',"data":{"resultType":"vector","result":[]}}',
    "prometheus/truncated.json": '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"h1"},"values":[[1700000000,"1"],[17000',
    # lint/: Kafka producer configurations.
    "lint/binary.properties": b"batch.size=\x00\x01\x02\nlinger.ms=\xff\xfe\n",
    "lint/escape.properties": "batch.size=20" + ESC + "\n" + ESC + "linger.ms=0\n",
    "lint/huge-number.properties": "batch.size=99999999999999999999999999\nlinger.ms=-1\nbuffer.memory=NaN\n",
    "lint/continuation.properties": "batch.size=\\\n\\\n\\\n",
    "lint/unterminated.py": "KafkaProducer(batch_size=20, linger_ms='0\n",
    "lint/deep.py": "KafkaProducer(batch_size=" + "(" * 5000 + "1" + ")" * 5000 + ")\n",
    "lint/escape.py": "KafkaProducer(batch_size=20, client_id='" + ESC + "')\n",
    "lint/empty.conf": "",
    "lint/equals.conf": "=\n==\nbatch.size==\nbatch.size=1=2\n",
    # json/: probe results, read by compare.
    "json/not-probe.json": "{\"kind\": \"memdoctor-probe\", \"samples\": \"many\"}\n",
    "json/nan.json": "{\"kind\": \"memdoctor-probe\", \"version\": 1, \"memory\": {\"uss\": [NaN]}}\n",
    "json/deep.json": "{\"kind\": \"memdoctor-probe\", \"x\": " + "[" * 100000 + "]" * 100000 + "}\n",
    "json/truncated.json": "{\"kind\": \"memdoctor-probe\", \"version\": 1, \"phases\": [{\"name\":\"bef",
}


def hostile_names():
    """The healthy capture with names a local user chooses: a memory cgroup
    job$(touch PWNED) near the limit it is given (its page cache made
    active), and a process named
    $(touch X) (its comm); every command memdoctor prints about them must
    quote them."""
    base = os.path.join(HERE, "..", "captures", "healthy-6.18-x86_64-hybrid.txtar")
    with open(base, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    old = "process_api/7c6a4d2abb254e0ea0ac9baebe516c93"
    new = "process_api/job$(touch PWNED)"
    text = text.replace(old, new)
    usage = "-- sys/fs/cgroup/memory/" + new + "/memory.usage_in_bytes --\n18194432\n"
    assert usage in text
    text = text.replace(usage, usage + "-- sys/fs/cgroup/memory/" + new + "/memory.limit_in_bytes --\n18874368\n")
    stat = "-- sys/fs/cgroup/memory/" + new + "/memory.stat --\n"
    i = text.index(stat)
    j = text.index("\n-- ", i + len(stat))
    text = text[:i] + text[i:j].replace("inactive_file 5935104", "inactive_file 0") + text[j:]
    status = "-- proc/1406/status --\nName:\t"
    i = text.index(status) + len(status)
    text = text[:i] + "$(touch X)" + text[text.index("\n", i):]
    return text


def main():
    for d in ("proc", "openmetrics", "lint", "json", "prometheus", "captures"):
        shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
    FILES["captures/hostile-names.txtar"] = hostile_names()
    for name, text in FILES.items():
        path = os.path.join(HERE, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)


if __name__ == "__main__":
    main()
