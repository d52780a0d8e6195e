package io.github.skewlens.flink.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The scenarios' defaults and the flags that override them. */
class ScenarioOptionsTest {
    @Test
    void modestHotKeyDefaults() {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {"--scenario", "modest_hot_key"});
        assertEquals(ScenarioOptions.Scenario.MODEST_HOT_KEY, o.scenario);
        assertEquals(0.2, o.effectiveHotShare());
        assertEquals(7.0, o.keyedCostMs());
        assertEquals(0.05, o.sampleRate());
        // The hot subtask is offered 1.12x its capacity of 1000/7 records/s:
        // 400/s at p=4, of which 0.2 + 0.8/4 go to it.
        assertEquals(400.0, o.effectiveRate(), 1e-9);
        assertEquals(-1, o.effectiveSlowSubtask());
    }

    @Test
    void flagsOverrideScenarioDefaults() {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {
            "--scenario", "modest_hot_key", "--hot-share", "0.15", "--sample-rate", "0.02",
            "--keyed-cost-ms", "5", "--rate", "300"});
        assertEquals(0.15, o.effectiveHotShare());
        assertEquals(0.02, o.sampleRate());
        assertEquals(5.0, o.keyedCostMs());
        assertEquals(300.0, o.effectiveRate());
    }

    @Test
    void otherScenariosKeepTheirDefaults() {
        ScenarioOptions hot = ScenarioOptions.parse(new String[] {"--scenario", "hot_key"});
        assertEquals(0.5, hot.effectiveHotShare());
        assertEquals(0.01, hot.sampleRate());
        assertEquals(1.0, hot.keyedCostMs());
        assertEquals(2000.0, hot.effectiveRate(), 1e-9);
        ScenarioOptions sink = ScenarioOptions.parse(new String[] {"--scenario", "slow_sink"});
        assertEquals(0.0, sink.effectiveHotShare());
        assertEquals(0.01, sink.sampleRate());
    }

    @Test
    void checkpointScenarioDefaults() {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {"--scenario", "checkpoint_timeout"});
        assertEquals(Duration.ofSeconds(20), o.checkpointInterval());
        assertEquals(Duration.ofSeconds(90), o.checkpointTimeout());
        assertEquals(1000, o.tolerableFailedCheckpoints());
        assertEquals(2, o.effectiveSlowSubtask());
        // 200 records/s a sink subtask: the slow one keeps up below 5 ms.
        assertEquals(800.0, o.effectiveRate(), 1e-9);
        List<ScenarioOptions.Step> st = o.sinkSteps();
        assertEquals(new ScenarioOptions.Step(Duration.ZERO, 2.0), st.get(0));
        assertEquals(98.0, st.get(st.size() - 1).costMs());
        ScenarioOptions r = ScenarioOptions.parse(new String[] {"--scenario", "checkpoint_recover"});
        assertEquals(2.0, r.sinkSteps().get(r.sinkSteps().size() - 1).costMs());
        // The others keep Flink's defaults and have no steps.
        ScenarioOptions sink = ScenarioOptions.parse(new String[] {"--scenario", "slow_sink"});
        assertEquals(Duration.ofSeconds(10), sink.checkpointInterval());
        assertEquals(Duration.ofMinutes(10), sink.checkpointTimeout());
        assertEquals(0, sink.tolerableFailedCheckpoints());
        assertTrue(sink.sinkSteps().isEmpty());
    }

    @Test
    void sinkStepsFlag() {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {
            "--scenario", "checkpoint_timeout", "--sink-steps", "0s=1.5, 500ms=4,2m=30",
            "--checkpoint-interval", "1s", "--checkpoint-timeout", "3s"});
        assertEquals(List.of(new ScenarioOptions.Step(Duration.ZERO, 1.5),
                new ScenarioOptions.Step(Duration.ofMillis(500), 4.0),
                new ScenarioOptions.Step(Duration.ofMinutes(2), 30.0)), o.sinkSteps());
        assertEquals(Duration.ofSeconds(1), o.checkpointInterval());
        assertEquals(Duration.ofSeconds(3), o.checkpointTimeout());
        for (String bad : new String[] {"5s=2", "0s=2,0s=3", "0s=2,5s", "0s=-1", "0s=x"}) {
            assertThrows(IllegalArgumentException.class,
                    () -> ScenarioOptions.parse(new String[] {"--scenario", "checkpoint_timeout", "--sink-steps", bad}),
                    bad);
        }
    }

    @Test
    void rejectsBadShareAndRate() {
        assertThrows(IllegalArgumentException.class,
                () -> ScenarioOptions.parse(new String[] {"--hot-share", "1"}));
        assertThrows(IllegalArgumentException.class,
                () -> ScenarioOptions.parse(new String[] {"--sample-rate", "1.5"}));
    }
}
