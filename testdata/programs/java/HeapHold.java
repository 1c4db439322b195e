// HeapHold keeps a live set and otherwise idles, for the heap-slack tests:
//
//   java HeapHold LIVE_MIB FULL_GCS SECONDS
//
// It allocates LIVE_MIB MiB in 1 MiB arrays and keeps them, runs FULL_GCS
// System.gc() calls, prints "ready" and then sleeps SECONDS before exiting.
// Run with the JVM's default heap settings it shows a fresh JVM: its initial
// heap committed but mostly untouched; run with a large -Xms and
// -XX:+AlwaysPreTouch and a few full collections it shows a heap that is
// really resident and nearly empty.
public class HeapHold {
    static volatile byte[][] live;

    public static void main(String[] args) throws Exception {
        int mib = Integer.parseInt(args[0]);
        int gcs = Integer.parseInt(args[1]);
        long seconds = Long.parseLong(args[2]);
        byte[][] keep = new byte[mib][];
        for (int i = 0; i < mib; i++) {
            keep[i] = new byte[1 << 20];
            java.util.Arrays.fill(keep[i], (byte) i);
        }
        live = keep;
        for (int i = 0; i < gcs; i++) {
            System.gc();
        }
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(seconds * 1000);
    }
}
