package io.github.skewlens.flink.reporter;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.flink.metrics.CharacterFilter;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.LogicalScopeProvider;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;

/** A metric group with a fixed logical scope and variables, as Flink's FrontMetricGroup presents one to reporters. */
final class FakeGroup implements MetricGroup, LogicalScopeProvider {
    final String scope;
    final Map<String, String> vars;

    FakeGroup(String scope, Map<String, String> vars) {
        this.scope = scope;
        this.vars = new LinkedHashMap<>(vars);
    }

    /** A task group of job j1 with the variables Flink gives one. */
    static FakeGroup task(String scope, String taskName, int subtask) {
        Map<String, String> v = new LinkedHashMap<>();
        v.put("<host>", "10.0.0.2");
        v.put("<tm_id>", "tm-1");
        v.put("<job_id>", "j1");
        v.put("<job_name>", "the job");
        v.put("<task_id>", "t1");
        v.put("<task_name>", taskName);
        v.put("<task_attempt_id>", "a1");
        v.put("<task_attempt_num>", "0");
        v.put("<subtask_index>", Integer.toString(subtask));
        return new FakeGroup(scope, v);
    }

    @Override public String getLogicalScope(CharacterFilter f) { return getLogicalScope(f, '.'); }
    @Override public String getLogicalScope(CharacterFilter f, char sep) { return scope.replace('.', sep); }
    @Override public MetricGroup getWrappedMetricGroup() { return this; }
    @Override public Counter counter(String name) { return new SimpleCounter(); }
    @Override public <C extends Counter> C counter(String name, C c) { return c; }
    @Override public <T, G extends Gauge<T>> G gauge(String name, G g) { return g; }
    @Override public <H extends Histogram> H histogram(String name, H h) { return h; }
    @Override public <M extends Meter> M meter(String name, M m) { return m; }
    @Override public MetricGroup addGroup(String name) { return new FakeGroup(scope + "." + name, vars); }
    @Override public MetricGroup addGroup(String key, String value) { return addGroup(key); }
    @Override public String[] getScopeComponents() { return scope.split("\\."); }
    @Override public Map<String, String> getAllVariables() { return vars; }
    @Override public String getMetricIdentifier(String name) { return vars + "." + scope + "." + name; }
    @Override public String getMetricIdentifier(String name, CharacterFilter f) { return getMetricIdentifier(name); }
}
