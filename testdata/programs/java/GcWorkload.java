// GcWorkload: a JVM workload for memdoctor's runtime tests.
//
//   java GcWorkload churn PORT    objects live a few seconds, then die in the
//                                 old generation; System.gc() twice a second
//   java GcWorkload healthy PORT  short-lived garbage only
//   java GcWorkload burst PORT    a burst of 320 MiB of large buffers, live
//                                 for two seconds then dropped; afterwards
//                                 light work with a 4 MiB live set
//
// It serves its own garbage collectors' figures on http://127.0.0.1:PORT/metrics
// in Micrometer's Prometheus names (jvm_gc_pause_seconds{gc,action,cause},
// jvm_memory_used_bytes{area,id}, ...), taken from the JDK's management beans
// and GC notifications, and prints one line "gc NAME COUNT MILLIS" per
// collector on /stats, and on /heap the heap as the JVM sees it ("committed",
// "used", "used_after_gc": the heap in use after the latest collection,
// "phase": burst or idle), so a test can compare what memdoctor reads with what
// the JVM itself says. It runs with G1 (its pool names are used).
import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

public class GcWorkload {
    // key: gc \0 action \0 cause -> {count, nanos}
    static final Map<String, long[]> pauses = new ConcurrentHashMap<>();
    static volatile Object sink;
    // Micrometer's JvmGcMetrics figures: old-generation growth across young
    // collections (promoted) and young-generation growth between
    // collections (allocated).
    static final java.util.concurrent.atomic.AtomicLong promoted = new java.util.concurrent.atomic.AtomicLong();
    static final java.util.concurrent.atomic.AtomicLong allocated = new java.util.concurrent.atomic.AtomicLong();
    static long youngAfterPrev;
    // Heap in use after the latest collection (all heap pools), and the
    // number of collections seen.
    static volatile long usedAfterGc = -1;
    static final java.util.concurrent.atomic.AtomicLong collections = new java.util.concurrent.atomic.AtomicLong();
    static volatile String phase = "start";

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int port = Integer.parseInt(args[1]);
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ((NotificationEmitter) gc).addNotificationListener((n, h) -> {
                if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                    return;
                }
                GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
                String k = info.getGcName() + "\0" + info.getGcAction() + "\0" + info.getGcCause();
                Map<String, java.lang.management.MemoryUsage> pre = info.getGcInfo().getMemoryUsageBeforeGc();
                Map<String, java.lang.management.MemoryUsage> post = info.getGcInfo().getMemoryUsageAfterGc();
                synchronized (GcWorkload.class) {
                    long youngBefore = pre.get("G1 Eden Space").getUsed();
                    allocated.addAndGet(Math.max(0, youngBefore - youngAfterPrev));
                    youngAfterPrev = post.get("G1 Eden Space").getUsed();
                }
                if (info.getGcAction().contains("minor")) {
                    long d = post.get("G1 Old Gen").getUsed() - pre.get("G1 Old Gen").getUsed();
                    if (d > 0) {
                        promoted.addAndGet(d);
                    }
                }
                long after = 0;
                for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
                    java.lang.management.MemoryUsage u = post.get(p.getName());
                    if (p.getType() == MemoryType.HEAP && u != null) {
                        after += u.getUsed();
                    }
                }
                usedAfterGc = after;
                collections.incrementAndGet();
                long[] v = pauses.computeIfAbsent(k, x -> new long[2]);
                synchronized (v) {
                    v[0]++;
                    v[1] += info.getGcInfo().getDuration() * 1_000_000L;
                }
            }, null, null);
        }
        HttpServer srv = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        srv.createContext("/metrics", ex -> {
            byte[] b = metrics().getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            ex.sendResponseHeaders(200, b.length);
            try (OutputStream o = ex.getResponseBody()) { o.write(b); }
        });
        srv.createContext("/stats", ex -> {
            StringBuilder sb = new StringBuilder();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                sb.append("gc ").append(gc.getName().replace(' ', '_')).append(' ')
                  .append(gc.getCollectionCount()).append(' ').append(gc.getCollectionTime()).append('\n');
            }
            byte[] b = sb.toString().getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            try (OutputStream o = ex.getResponseBody()) { o.write(b); }
        });
        srv.createContext("/heap", ex -> {
            java.lang.management.MemoryUsage h = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
            String body = "committed " + h.getCommitted() + "\nused " + h.getUsed() + "\nused_after_gc " + usedAfterGc
                + "\ntotal_memory " + Runtime.getRuntime().totalMemory() + "\nphase " + phase + "\n";
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            try (OutputStream o = ex.getResponseBody()) { o.write(b); }
        });
        srv.start();
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        if (mode.equals("churn")) {
            churn();
        } else if (mode.equals("burst")) {
            burst();
        } else {
            healthy();
        }
    }

    // churn keeps each batch of objects for about two seconds: long enough
    // to be promoted, too short to live forever, and calls System.gc().
    static void churn() throws InterruptedException {
        ArrayDeque<Object[]> kept = new ArrayDeque<>();
        long lastGc = System.nanoTime();
        while (true) {
            Object[] batch = new Object[1000];
            for (int i = 0; i < batch.length; i++) {
                batch[i] = new byte[512];
            }
            kept.addLast(batch);
            if (kept.size() > 150) {
                kept.removeFirst();
            }
            if (System.nanoTime() - lastGc > 500_000_000L) {
                System.gc();
                lastGc = System.nanoTime();
            }
            Thread.sleep(5);
        }
    }

    // burst holds 320 MiB of 768 KiB buffers for two seconds (a large
    // request or report built in memory), drops them, then works lightly
    // over a 4 MiB live set. G1 allocates such buffers in whole regions
    // and frees them at the next young collection once unreachable, so the
    // live heap falls back to a few MiB; the committed heap stays as large
    // as the burst made it unless a concurrent cycle or full collection
    // (periodic, with -XX:G1PeriodicGCInterval) resizes it.
    static void burst() throws InterruptedException {
        Object[] live = new Object[4096];
        for (int i = 0; i < live.length; i++) {
            live[i] = new byte[1024];
        }
        phase = "burst";
        hold(320 * 4 / 3);
        // Light work until a collection has freed the burst.
        long seen = collections.get();
        while (collections.get() == seen) {
            for (int i = 0; i < 1000; i++) {
                sink = new byte[1024];
            }
        }
        phase = "idle";
        while (true) {
            for (int i = 0; i < 32; i++) {
                sink = new byte[1024];
            }
            live[(int) (System.nanoTime() % live.length)] = new byte[1024];
            Thread.sleep(50);
        }
    }

    // hold keeps n buffers of 768 KiB reachable from its stack frames for
    // two seconds. Stack references are roots, not old-generation
    // references, so nothing but the frames keeps the buffers alive.
    static long hold(int n) throws InterruptedException {
        byte[] b = new byte[768 << 10];
        long size = n > 1 ? hold(n - 1) : 0;
        if (n == 1) {
            Thread.sleep(2000);
        }
        return size + b.length;
    }

    // healthy allocates only garbage that dies at once.
    static void healthy() throws InterruptedException {
        while (true) {
            for (int i = 0; i < 2000; i++) {
                sink = new byte[512];
            }
            Thread.sleep(5);
        }
    }

    static String metrics() {
        StringBuilder sb = new StringBuilder();
        sb.append("# HELP jvm_gc_pause_seconds Time spent in GC pause\n# TYPE jvm_gc_pause_seconds summary\n");
        for (Map.Entry<String, long[]> e : pauses.entrySet()) {
            String[] k = e.getKey().split("\0", -1);
            long c, ns;
            synchronized (e.getValue()) { c = e.getValue()[0]; ns = e.getValue()[1]; }
            String l = "{action=\"" + k[1] + "\",cause=\"" + k[2] + "\",gc=\"" + k[0] + "\"}";
            sb.append("jvm_gc_pause_seconds_count").append(l).append(' ').append(c).append('\n');
            sb.append("jvm_gc_pause_seconds_sum").append(l).append(' ').append(ns / 1e9).append('\n');
        }
        for (String what : new String[] {"used", "committed", "max"}) {
            sb.append("# TYPE jvm_memory_").append(what).append("_bytes gauge\n");
            for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
                long v = what.equals("used") ? p.getUsage().getUsed()
                       : what.equals("committed") ? p.getUsage().getCommitted() : p.getUsage().getMax();
                String area = p.getType() == MemoryType.HEAP ? "heap" : "nonheap";
                sb.append("jvm_memory_").append(what).append("_bytes{area=\"").append(area).append("\",id=\"")
                  .append(p.getName()).append("\"} ").append(v).append('\n');
            }
        }
        sb.append("# TYPE jvm_gc_memory_promoted_bytes_total counter\njvm_gc_memory_promoted_bytes_total ").append(promoted.get()).append('\n');
        sb.append("# TYPE jvm_gc_memory_allocated_bytes_total counter\njvm_gc_memory_allocated_bytes_total ").append(allocated.get()).append('\n');
        sb.append("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ")
          .append(ManagementFactory.getRuntimeMXBean().getStartTime() / 1000.0).append('\n');
        return sb.toString();
    }
}
