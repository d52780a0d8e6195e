package io.github.skewlens.flink;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.flink.client.cli.CliFrontendParser;
import org.apache.flink.client.cli.DefaultCLI;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.runtime.util.EnvironmentInformation;

/**
 * Parses the forms skewlens emits (skew/rescale's testdata) with the Flink
 * code that consumes them, whichever Flink is on the classpath, and
 * prints what Flink made of each, one {@code name=value} line per form.
 * RescaleFormsTest runs it in its own JVM (Flink 2.3.0, the module's) and
 * in a child JVM on Flink 1.20.5's jars: it uses only API that both
 * versions have.
 *
 * <ul>
 *   <li>{@code overrides}: the value of pipeline.jobvertex-parallelism-overrides,
 *       set as a string and read as the map option, as a cluster's
 *       configuration reads it;
 *   <li>{@code dynamic_property}: the {@code flink run -D…} argument, through
 *       flink run's own command-line parser (CliFrontendParser, DefaultCLI);
 *   <li>{@code autoscaler_exclude}: the value of job.autoscaler.vertex.exclude.ids,
 *       read as the autoscaler declares the option (a list of strings,
 *       AutoScalerOptions.VERTEX_EXCLUDE_IDS, not in Flink's own jars);
 *   <li>{@code overrides_patch}, {@code autoscaler_patch}: the two
 *       FlinkDeployment patches' flinkConfiguration, written as the
 *       config.yaml the operator gives the cluster and loaded by
 *       GlobalConfiguration.
 * </ul>
 */
public final class RescaleFormsCheck {

    /** job.autoscaler.vertex.exclude.ids as the autoscaler declares it. */
    static final ConfigOption<List<String>> VERTEX_EXCLUDE_IDS =
            ConfigOptions.key("job.autoscaler.vertex.exclude.ids").stringType().asList().defaultValues();

    private RescaleFormsCheck() {}

    public static void main(String[] args) throws Exception {
        for (Map.Entry<String, String> e : check(Path.of(args[0])).entrySet()) {
            System.out.println(e.getKey() + "=" + e.getValue());
        }
    }

    /** What Flink made of each form in dir (skew/rescale/testdata). */
    static Map<String, String> check(Path dir) throws Exception {
        Map<String, String> forms = new LinkedHashMap<>();
        for (String line : Files.readAllLines(dir.resolve("forms.txt"))) {
            int eq = line.indexOf('=');
            forms.put(line.substring(0, eq), line.substring(eq + 1));
        }
        Map<String, String> out = new LinkedHashMap<>();
        out.put("flink", EnvironmentInformation.getVersion());

        Configuration conf = new Configuration();
        conf.setString(PipelineOptions.PARALLELISM_OVERRIDES.key(), forms.get("overrides"));
        out.put("overrides", sorted(conf.get(PipelineOptions.PARALLELISM_OVERRIDES)));

        Options options = CliFrontendParser.getRunCommandOptions();
        DefaultCLI cli = new DefaultCLI();
        cli.addGeneralOptions(options);
        cli.addRunOptions(options);
        CommandLine line = CliFrontendParser.parse(options, new String[] {forms.get("dynamic_property"), "job.jar"}, true);
        out.put("dynamic_property", sorted(cli.toConfiguration(line).get(PipelineOptions.PARALLELISM_OVERRIDES)));

        Configuration ex = new Configuration();
        ex.setString(VERTEX_EXCLUDE_IDS.key(), forms.get("autoscaler_exclude"));
        out.put("autoscaler_exclude", String.join(",", ex.get(VERTEX_EXCLUDE_IDS)));

        out.put("overrides_patch", sorted(loadPatch(dir.resolve("overrides.patch.yaml")).get(PipelineOptions.PARALLELISM_OVERRIDES)));
        out.put("autoscaler_patch", String.join(",", loadPatch(dir.resolve("autoscaler-exclude.patch.yaml")).get(VERTEX_EXCLUDE_IDS)));
        return out;
    }

    /**
     * The patch's spec.flinkConfiguration as a cluster's config.yaml (the
     * operator writes the map there), loaded by Flink. The patches are
     * skewlens' fixed shape: "spec:", "  flinkConfiguration:", then the
     * keys indented by four spaces.
     */
    static Configuration loadPatch(Path patch) throws IOException {
        List<String> lines = Files.readAllLines(patch);
        if (lines.size() < 3 || !lines.get(0).equals("spec:") || !lines.get(1).equals("  flinkConfiguration:")) {
            throw new IOException(patch + ": not a spec.flinkConfiguration patch");
        }
        List<String> yaml = new ArrayList<>();
        for (String l : lines.subList(2, lines.size())) {
            if (!l.startsWith("    ")) {
                throw new IOException(patch + ": line outside flinkConfiguration: " + l);
            }
            yaml.add(l.substring(4));
        }
        Path confDir = Files.createTempDirectory("skewlens-patch");
        try {
            Files.write(confDir.resolve("config.yaml"), yaml);
            return GlobalConfiguration.loadConfiguration(confDir.toString());
        } finally {
            Files.deleteIfExists(confDir.resolve("config.yaml"));
            Files.deleteIfExists(confDir);
        }
    }

    private static String sorted(Map<String, String> m) {
        return new TreeMap<>(m).toString();
    }
}
