package io.github.skewlens.flink.reporter;

import java.util.Properties;

import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * Creates the {@link SkewlensReporter}; registered in
 * {@code META-INF/services/org.apache.flink.metrics.reporter.MetricReporterFactory}
 * so that {@code metrics.reporter.NAME.factory.class:
 * io.github.skewlens.flink.reporter.SkewlensReporterFactory} finds it, from
 * Flink's {@code plugins/} or {@code lib/}. The configuration is read in
 * {@link SkewlensReporter#open}, which Flink calls with the same properties.
 */
public final class SkewlensReporterFactory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new SkewlensReporter();
    }
}
