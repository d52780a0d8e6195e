package io.github.skewlens.flink;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.flink.client.cli.CliFrontendParser;
import org.apache.flink.client.cli.DefaultCLI;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The forms skewlens emits for an under_provisioned finding
 * (skew/rescale, its testdata/forms.txt), parsed by the Flink code that
 * consumes them: the overrides value by Flink's configuration, the
 * {@code flink run -D} argument by Flink's command-line parser.
 */
class RescaleFormsTest {

    private static final Map<String, String> WANT =
            Map.of("cbc357ccb763df2852fee8c4fc7d55f2", "16", "0a448493b4782967b150582570326227", "6");

    private static Map<String, String> forms() throws Exception {
        Map<String, String> out = new HashMap<>();
        List<String> lines = Files.readAllLines(Path.of("..", "..", "skew", "rescale", "testdata", "forms.txt"));
        for (String line : lines) {
            int eq = line.indexOf('=');
            out.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return out;
    }

    @Test
    void overridesParseAsFlinkMap() throws Exception {
        Configuration conf = new Configuration();
        conf.setString(PipelineOptions.PARALLELISM_OVERRIDES.key(), forms().get("overrides"));
        assertEquals(WANT, conf.get(PipelineOptions.PARALLELISM_OVERRIDES));
    }

    @Test
    void dynamicPropertyParsesAsFlinkRunDoes() throws Exception {
        Options options = CliFrontendParser.getRunCommandOptions();
        DefaultCLI cli = new DefaultCLI();
        cli.addGeneralOptions(options);
        cli.addRunOptions(options);
        CommandLine line = CliFrontendParser.parse(options, new String[] {forms().get("dynamic_property"), "job.jar"}, true);
        Configuration conf = cli.toConfiguration(line);
        assertEquals(WANT, conf.get(PipelineOptions.PARALLELISM_OVERRIDES));
    }
}
