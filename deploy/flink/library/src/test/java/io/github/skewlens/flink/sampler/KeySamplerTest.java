package io.github.skewlens.flink.sampler;

import org.apache.flink.metrics.SimpleCounter;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.kafka.LogCapture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KeySamplerTest {
    @Test
    void skipsAreGeometricWithMeanOneOverRate() {
        java.util.SplittableRandom r = new java.util.SplittableRandom(7);
        for (double p : new double[] {0.5, 0.1, 0.01, 0.001}) {
            double inv = 1 / Math.log1p(-p);
            int n = 200_000;
            double sum = 0;
            long ones = 0;
            for (int i = 0; i < n; i++) {
                long g = KeySampler.geometric(inv, r.nextLong());
                assertTrue(g >= 1);
                sum += g;
                if (g == 1) {
                    ones++;
                }
            }
            double mean = sum / n;
            assertEquals(1 / p, mean, 0.02 / p, "mean skip at rate " + p);
            assertEquals(p, (double) ones / n, 4 * Math.sqrt(p * (1 - p) / n) + 1e-9, "P(skip=1) at rate " + p);
        }
        // The extremes of the 64 random bits stay finite and >= 1.
        double inv = 1 / Math.log1p(-1e-9);
        assertTrue(KeySampler.geometric(inv, 0) > 1);
        assertEquals(1, KeySampler.geometric(inv, -1L));
    }

    @Test
    void disabledSamplerSamplesNothing() {
        KeySampler s = new KeySampler(null, "", "", "", 0, 1, new SimpleCounter(), new SimpleCounter(), 1);
        for (int i = 0; i < 1000; i++) {
            s.sample("k");
            s.sample((Object) null);
        }
        assertEquals(0, s.sent());
        assertEquals(0, s.dropped());
        assertFalse(s.enabled());
        s.close();
        s.close();
    }

    @Test
    void invalidConfigurationLogsAnErrorAndNeverThrows() {
        KeySampler.Config c = KeySampler.Config.of("h:1");
        c.sampleRate = 0;
        assertThrows(IllegalArgumentException.class, c::validate);
        c.sampleRate = 1.5;
        assertThrows(IllegalArgumentException.class, c::validate);
        c.sampleRate = Double.NaN;
        assertThrows(IllegalArgumentException.class, c::validate);
        c.sampleRate = 1;
        c.validate();
        assertEquals("flink-key-samples", c.sender.topic);
        assertEquals(0.01, new KeySampler.Config().sampleRate);

        KeySampler.Config bad = KeySampler.Config.of("");
        try (LogCapture log = LogCapture.open()) {
            KeySampler s = KeySampler.open(null, bad);
            assertFalse(s.enabled());
            s.sample("k");
            s.close();
            assertTrue(log.any(l -> l.startsWith("ERROR") && l.contains("skewlens key sampler")), log.lines().toString());
        }
    }
}
