package io.github.skewlens.flink.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
    void rejectsBadShareAndRate() {
        assertThrows(IllegalArgumentException.class,
                () -> ScenarioOptions.parse(new String[] {"--hot-share", "1"}));
        assertThrows(IllegalArgumentException.class,
                () -> ScenarioOptions.parse(new String[] {"--sample-rate", "1.5"}));
    }
}
