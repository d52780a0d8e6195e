package io.github.skewlens.flink;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The forms skewlens emits for an under_provisioned finding and for the
 * autoscaler exclusion (skew/rescale, its testdata), parsed by the Flink
 * code that consumes them (RescaleFormsCheck): the overrides value and the
 * exclusion by Flink's configuration, the {@code flink run -D} argument by
 * Flink's command-line parser, the FlinkDeployment patches as the
 * config.yaml the operator writes. Once on the module's Flink 2.3.0, and
 * once on Flink 1.20.5 in a child JVM whose classpath is the 1.20.5
 * cluster's (deploy/flink/cluster's pom, resolved as the Go cluster tests
 * resolve it, into the same file under the same lock).
 */
class RescaleFormsTest {

    private static final Path TESTDATA = Path.of("..", "..", "..", "skew", "rescale", "testdata");
    private static final String OVERRIDES = "{0a448493b4782967b150582570326227=6, cbc357ccb763df2852fee8c4fc7d55f2=16}";
    private static final String EXCLUDED = "0a448493b4782967b150582570326227,cbc357ccb763df2852fee8c4fc7d55f2";

    private static void assertParsed(String version, Map<String, String> got) {
        assertEquals(version, got.get("flink"), "Flink version of the parse");
        assertEquals(OVERRIDES, got.get("overrides"), "overrides value as a map option");
        assertEquals(OVERRIDES, got.get("dynamic_property"), "flink run -D argument");
        assertEquals(EXCLUDED, got.get("autoscaler_exclude"), "job.autoscaler.vertex.exclude.ids as a list");
        assertEquals(OVERRIDES, got.get("overrides_patch"), "FlinkDeployment patch as config.yaml");
        assertEquals(EXCLUDED, got.get("autoscaler_patch"), "autoscaler FlinkDeployment patch as config.yaml");
    }

    @Test
    void flink23ParsesEveryForm() throws Exception {
        assertParsed("2.3.0", RescaleFormsCheck.check(TESTDATA));
    }

    @Test
    void flink120ParsesEveryForm() throws Exception {
        Path testClasses = Path.of(RescaleFormsCheck.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String cp = clusterClasspath("1.20.5") + java.io.File.pathSeparator + testClasses;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String out = run(new ProcessBuilder(java, "-Xmx256m", "-cp", cp, RescaleFormsCheck.class.getName(), TESTDATA.toString()), 120);
        Map<String, String> got = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                got.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertParsed("1.20.5", got);
    }

    /**
     * The jars of a Flink session cluster of version (deploy/flink/cluster),
     * resolved by Maven once into target/classpath-VERSION.txt of that
     * module: the file and the lock the Go cluster tests (flinktest) use.
     */
    private static String clusterClasspath(String version) throws Exception {
        Path dir = Path.of("..", "cluster");
        String file = "target/classpath-" + version + ".txt";
        String script = "set -e\nmkdir -p target\nexec 9>target/.build.lock\nflock 9\n"
                + "[ -s \"$2\" ] || mvn -B -q dependency:build-classpath -Dflink.version=\"$1\" -Dmdep.outputFile=\"$2\"";
        run(new ProcessBuilder("bash", "-c", script, "bash", version, file).directory(dir.toFile()), 600);
        String cp = Files.readString(dir.resolve(file)).trim();
        assertTrue(cp.contains("flink-clients-" + version + ".jar"), "classpath of Flink " + version + ": " + cp);
        return cp;
    }

    /** Runs pb, fails unless it exits 0 within the timeout, returns its output. */
    private static String run(ProcessBuilder pb, long timeoutSeconds) throws IOException, InterruptedException {
        Process p = pb.redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread reader = new Thread(() -> {
            try (InputStream in = p.getInputStream()) {
                in.transferTo(out);
            } catch (IOException e) {
                // the process ended; what was read is reported below
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(List.of(pb.command()) + " did not end within " + timeoutSeconds + " s");
        }
        reader.join();
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), pb.command() + " failed:\n" + text);
        return text;
    }
}
