import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A JVM that hoards freed native memory in glibc malloc.
 *
 * <p>usage: java MallocTarget MIB
 *
 * <p>Allocates MIB MiB of native blocks of 1-16 KiB with Unsafe.allocateMemory
 * (the JVM's os::malloc, which is glibc malloc), then frees all but one in
 * 32: the survivors pin the pages, so malloc keeps most of it as free chunks.
 * The main thread then reads commands on stdin: "info" prints one JSON line
 * with the bytes it freed and still holds and its VmRSS; "gc" runs
 * System.gc() (the JVM still works after memdoctor called into it);
 * "exit" exits.
 */
public class MallocTarget {
    public static void main(String[] args) throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        sun.misc.Unsafe u = (sun.misc.Unsafe) f.get(null);
        long target = Long.parseLong(args[0]) << 20;
        Random rnd = new Random(1);
        List<long[]> blocks = new ArrayList<>();
        long total = 0;
        while (total < target) {
            int n = 1024 + rnd.nextInt(16384 - 1024);
            long p = u.allocateMemory(n);
            u.setMemory(p, n, (byte) 1);
            blocks.add(new long[] {p, n});
            total += n;
        }
        long freed = 0, kept = 0;
        for (int i = 0; i < blocks.size(); i++) {
            long[] b = blocks.get(i);
            if (i % 32 == 0) {
                kept += b[1];
            } else {
                u.freeMemory(b[0]);
                freed += b[1];
            }
        }
        info(freed, kept);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            switch (line.trim()) {
                case "info":
                    info(freed, kept);
                    break;
                case "gc":
                    System.gc();
                    info(freed, kept);
                    break;
                case "exit":
                    return;
                default:
                    break;
            }
        }
    }

    static void info(long freed, long kept) throws Exception {
        long rss = 0;
        for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                rss = Long.parseLong(l.split("\\s+")[1]);
            }
        }
        System.out.println("ready {\"pid\":" + ProcessHandle.current().pid() + ",\"freed\":" + freed
                + ",\"kept\":" + kept + ",\"rss_kb\":" + rss + "}");
        System.out.flush();
    }
}
