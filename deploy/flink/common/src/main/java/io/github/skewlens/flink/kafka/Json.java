package io.github.skewlens.flink.kafka;

/**
 * Appends JSON strings and numbers to a StringBuilder: the two things the
 * reporter and the sampler write. Hand-written because they run for every
 * reported metric and every sampled key, and an ObjectMapper per line would
 * allocate a tree for a line of a few fields.
 */
public final class Json {
    private Json() {}

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    /** Appends s as a JSON string, quotes included (RFC 8259 escaping). */
    public static StringBuilder string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20 || Character.isSurrogate(c) && !validSurrogateAt(s, i)) {
                        // Control characters, and lone surrogates (not valid
                        // UTF-8), as \\u escapes.
                        sb.append("\\u").append(HEX[c >> 12 & 15]).append(HEX[c >> 8 & 15])
                                .append(HEX[c >> 4 & 15]).append(HEX[c & 15]);
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"');
    }

    private static boolean validSurrogateAt(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }

    /**
     * Appends a finite number; NaN and infinities have no JSON form and are
     * written as null (skewlens treats null as absent).
     */
    public static StringBuilder number(StringBuilder sb, double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return sb.append("null");
        }
        if (v == Math.rint(v) && Math.abs(v) < 1e15) {
            return sb.append((long) v);
        }
        return sb.append(v);
    }
}
