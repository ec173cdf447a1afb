/*
 * CuratorCandidate - one Apache Curator LeaderLatch candidate, the Java reference for
 * bench/failover.py.
 *
 * It speaks the same line protocol as `reign campaign` on stdout, so the harness can time all
 * implementations the same way:
 *
 *   elected <id> term=0 token=<seq> monotonic_ns=<ns>
 *   demoted <id> reason=<why> monotonic_ns=<ns>
 *
 * LeaderLatch has no term, so term is 0 and token is the sequence number of the latch node.
 * The timestamp is System.nanoTime(): on Linux, OpenJDK reads CLOCK_MONOTONIC for it, the clock
 * of the reign CLI and of Python's time.monotonic_ns() (the harness checks this at start-up).
 *
 * SIGTERM runs the shutdown hook, which resigns the way a Curator user would: latch.close()
 * (deletes the latch node) and then closes the client (ends the session); then it exits 0.
 *
 * Usage: java -cp ... CuratorCandidate --connect HOST:PORT --session-timeout MS
 *            --path /latch/path --id ID
 */
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorCandidate {
    private static final PrintStream OUT = new PrintStream(System.out, true);
    private static final Object LOCK = new Object();
    private static boolean leading = false;

    private static void emit(String line) {
        synchronized (LOCK) {
            OUT.println(line);
            OUT.flush();
        }
    }

    private static long sequenceOf(String path) {
        if (path == null || path.length() < 10) {
            return 0;
        }
        try {
            return Long.parseLong(path.substring(path.length() - 10));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static void usage(String why) {
        System.err.println("CuratorCandidate: " + why);
        System.err.println("usage: CuratorCandidate --connect HOST:PORT --session-timeout MS"
                + " --path /latch/path --id ID");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opt.put(args[i], args[i + 1]);
        }
        if (args.length % 2 != 0) {
            usage("odd number of arguments");
        }
        for (String k : new String[] {"--connect", "--session-timeout", "--path", "--id"}) {
            if (!opt.containsKey(k)) {
                usage("missing " + k);
            }
        }
        final String id = opt.get("--id");
        final int timeoutMs = Integer.parseInt(opt.get("--session-timeout"));

        final CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(opt.get("--connect"))
                .sessionTimeoutMs(timeoutMs)
                .connectionTimeoutMs(Math.max(timeoutMs, 15000))
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        final LeaderLatch latch = new LeaderLatch(client, opt.get("--path"), id,
                LeaderLatch.CloseMode.SILENT);

        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                long now = System.nanoTime();
                synchronized (LOCK) {
                    leading = true;
                    emit("elected " + id + " term=0 token=" + sequenceOf(latch.getOurPath())
                            + " monotonic_ns=" + now);
                }
            }

            @Override
            public void notLeader() {
                long now = System.nanoTime();
                synchronized (LOCK) {
                    if (leading) {
                        leading = false;
                        emit("demoted " + id + " reason=lost monotonic_ns=" + now);
                    }
                }
            }
        });

        /* Report why leadership went, in the CLI's words, when the connection is the cause. */
        client.getConnectionStateListenable().addListener((c, state) -> {
            long now = System.nanoTime();
            String reason = state == ConnectionState.LOST ? "session_lost"
                    : state == ConnectionState.SUSPENDED ? "suspended" : null;
            synchronized (LOCK) {
                if (reason != null && leading) {
                    leading = false;
                    emit("demoted " + id + " reason=" + reason + " monotonic_ns=" + now);
                }
            }
        });

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long now = System.nanoTime();
            synchronized (LOCK) {
                if (leading) {
                    leading = false;
                    emit("demoted " + id + " reason=resigned monotonic_ns=" + now);
                }
            }
            try {
                latch.close();
            } catch (Exception e) {
                System.err.println("CuratorCandidate: close: " + e);
            }
            client.close();
            /* Exit 0 as `reign campaign` does after a resign; the JVM would report 143. */
            Runtime.getRuntime().halt(0);
        }, "resign"));

        client.start();
        latch.start();
        Thread.currentThread().join(); /* until SIGTERM runs the hook and the JVM exits */
    }
}
