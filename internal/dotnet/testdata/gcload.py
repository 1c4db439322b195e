"""A .NET Core process for the tests: Python hosting the runtime (PyPI
dotnetcore2, pythonnet) with Server GC, concurrent GC and invariant
globalization, then one of:

  busy   forced gen2 collections by System.GC.Collect() every 0.1 s, 200 KB
         System.Byte[] (large object heap) as fast as it can, and objects
         kept alive (a bounded cache that grows into gen2);
  flush  as busy, but System.GC.Collect() is called by Acme.Cache.Flush(),
         a managed method emitted at start (System.Reflection.Emit: there
         is no C# compiler here), which Python calls through a delegate;
  quiet  nothing: the runtime sits idle;
  loop   small allocations in a loop, printing the iteration count every
         0.5 s ("iters N"): the throughput a session costs.

It prints "ready PID VERSION server|workstation LATENCYMODE LIMIT" once
the runtime is up (LIMIT: the memory the GC may use, its heap hard limit
when one is set), and stops by itself after the seconds given (default
60) so that no test leaves it behind.

GCLOAD_METHODS=N (flush) also compiles N more emitted methods (Acme.Many),
for the size and the time of a rundown of many methods, and prints
"methods N" when they are.

GCLOAD_PROPS (a JSON object) adds to or replaces the runtimeconfig.json's
configProperties; GCLOAD_KEEP_CONFIG=1 writes the file beside this script
(its name with .runtimeconfig.json) and keeps it there, where memdoctor
looks for the runtimeconfig.json of a host's entry script.
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

mode = sys.argv[1] if len(sys.argv) > 1 else "busy"
life = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0

import dotnetcore2  # noqa: E402

root = Path(dotnetcore2.__file__).parent / "bin"
props = {
    "System.GC.Server": True,
    "System.GC.Concurrent": True,
    "System.Globalization.Invariant": True,
}
props.update(json.loads(os.environ.get("GCLOAD_PROPS", "{}")))
keep = os.environ.get("GCLOAD_KEEP_CONFIG") == "1"
if keep:
    cfgdir = None
    cfg = Path(__file__).resolve().with_suffix(".runtimeconfig.json")
else:
    cfgdir = tempfile.mkdtemp(prefix="gcload-")
    cfg = Path(cfgdir) / "gcload.runtimeconfig.json"
cfg.write_text(json.dumps({"runtimeOptions": {
    "tfm": "netcoreapp3.1",
    "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.0"},
    "configProperties": props}}))

import pythonnet  # noqa: E402

pythonnet.load("coreclr", runtime_config=str(cfg), dotnet_root=str(root))
import clr  # noqa: E402,F401
import System  # noqa: E402

# A runtime started for an application's Main creates its System.Runtime
# counters (RuntimeEventSource) at start-up; one hosted as a component,
# as pythonnet does, does not: create them as Main's start-up does, unless
# GCLOAD_COUNTERS=0.
if os.environ.get("GCLOAD_COUNTERS") != "0":
    flags = (System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Public
             | System.Reflection.BindingFlags.NonPublic)
    System.Type.GetType("System.Diagnostics.Tracing.RuntimeEventSource, System.Private.CoreLib") \
        .GetMethod("Initialize", flags).Invoke(None, None)
if not keep:
    os.unlink(cfg)
    os.rmdir(cfgdir)
print("ready", os.getpid(), System.Environment.Version,
      "server" if System.Runtime.GCSettings.IsServerGC else "workstation",
      System.Runtime.GCSettings.LatencyMode,
      System.GC.GetGCMemoryInfo().TotalAvailableMemoryBytes, flush=True)

end = time.monotonic() + life
if mode == "quiet":
    while time.monotonic() < end:
        time.sleep(0.2)
elif mode == "loop":
    n = 0
    nxt = time.monotonic() + 0.5
    while time.monotonic() < end:
        for _ in range(200):
            System.Text.StringBuilder(64).Append("x").ToString()
        n += 200
        now = time.monotonic()
        if now >= nxt:
            print("iters", n, flush=True)
            nxt = now + 0.5
else:
    collect = lambda: System.GC.Collect(2, System.GCCollectionMode.Forced, True)  # noqa: E731
    if mode == "flush":
        from System.Reflection import AssemblyName, MethodAttributes, TypeAttributes
        from System.Reflection.Emit import AssemblyBuilder, AssemblyBuilderAccess, OpCodes
        asm = AssemblyBuilder.DefineDynamicAssembly(AssemblyName("Acme.Cache"), AssemblyBuilderAccess.Run)
        mod = asm.DefineDynamicModule("Acme.Cache")
        tb = mod.DefineType(
            "Acme.Cache", TypeAttributes.Public | TypeAttributes.Class | TypeAttributes.Sealed)
        mb = tb.DefineMethod("Flush", MethodAttributes.Public | MethodAttributes.Static,
                             System.Int32, System.Type.EmptyTypes)
        il = mb.GetILGenerator()
        gc = System.Type.GetType("System.GC")
        # GC.Collect(2, GCCollectionMode.Forced, true); return
        # GC.CollectionCount(2). The call is not Flush's last, or the JIT's
        # optimized tier would make it a tail call (a jump: Flush's frame
        # would be on no stack).
        il.Emit(OpCodes.Ldc_I4_2)
        il.Emit(OpCodes.Ldc_I4_1)
        il.Emit(OpCodes.Ldc_I4_1)
        il.Emit(OpCodes.Call, gc.GetMethod("Collect", [System.Int32, System.GCCollectionMode, System.Boolean]))
        il.Emit(OpCodes.Ldc_I4_2)
        il.Emit(OpCodes.Call, gc.GetMethod("CollectionCount", [System.Int32]))
        il.Emit(OpCodes.Ret)
        flush = System.Delegate.CreateDelegate(System.Func[System.Int32], tb.CreateType().GetMethod("Flush"))
        collect = flush.Invoke
        many = int(os.environ.get("GCLOAD_METHODS") or 0)
        if many > 0:
            tm = mod.DefineType("Acme.Many", TypeAttributes.Public | TypeAttributes.Class)
            for i in range(many):
                m = tm.DefineMethod("M%d" % i, MethodAttributes.Public | MethodAttributes.Static,
                                    System.Int32, System.Type.EmptyTypes)
                g = m.GetILGenerator()
                g.Emit(OpCodes.Ldc_I4, i)
                g.Emit(OpCodes.Ret)
            prepare = System.Runtime.CompilerServices.RuntimeHelpers.PrepareMethod
            for m in tm.CreateType().GetMethods():
                if m.Name.startswith("M"):
                    prepare(m.MethodHandle)
            print("methods", many, flush=True)
    cache = []
    nextgc = time.monotonic()
    while time.monotonic() < end:
        System.Array.CreateInstance(System.Byte, 200 * 1024)
        # The cache grows to 4000 small arrays (~ 4 MB) kept alive, then
        # turns over slowly: gen2 growth, bounded.
        cache.append(System.Array.CreateInstance(System.Byte, 1024))
        if len(cache) > 4000:
            del cache[:100]
        now = time.monotonic()
        if now >= nextgc:
            collect()
            nextgc = now + 0.1
