package io.github.skewlens.flink.scenario;

/**
 * SIGTERM and SIGINT as a request to stop cleanly (cancel the job, write the
 * truth, exit 0) rather than the JVM's default of running shutdown hooks and
 * exiting 143. Uses sun.misc.Signal (module jdk.unsupported), looked up
 * reflectively so that javac does not warn about a proprietary API; without
 * it, a shutdown hook runs the same action.
 */
final class Signals {
    private Signals() {}

    static void onTerminate(Runnable action) {
        boolean handled = false;
        try {
            Class<?> signal = Class.forName("sun.misc.Signal");
            Class<?> handler = Class.forName("sun.misc.SignalHandler");
            Object h = java.lang.reflect.Proxy.newProxyInstance(Signals.class.getClassLoader(),
                    new Class<?>[] {handler}, (proxy, method, args) -> {
                        if (method.getName().equals("handle")) {
                            action.run();
                        }
                        return null;
                    });
            for (String name : new String[] {"TERM", "INT"}) {
                Object s = signal.getConstructor(String.class).newInstance(name);
                signal.getMethod("handle", signal, handler).invoke(null, s, h);
            }
            handled = true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            ScenarioJob.log("no signal handler (" + e + "); a shutdown hook stops the job");
        }
        if (!handled) {
            Runtime.getRuntime().addShutdownHook(new Thread(action, "scenario-stop"));
        }
    }
}
