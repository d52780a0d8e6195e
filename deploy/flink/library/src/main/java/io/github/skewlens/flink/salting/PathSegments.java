package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;

/**
 * Percent-encoding of URL path segments (RFC 3986): every byte of the
 * UTF-8 form except the unreserved characters {@code A-Z a-z 0-9 - . _ ~}
 * becomes {@code %XX}. So a '/' in a task name is {@code %2F} and stays one
 * segment, a space is {@code %20} (never '+'), and '%' itself is
 * {@code %25}.
 *
 * <p>{@code java.net.URLEncoder} is not used: it encodes HTML forms, where a
 * space is '+' and '*' stays as is; in a path '+' is a literal plus.
 *
 * <p>Thread safety: stateless.
 */
final class PathSegments {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private PathSegments() {}

    /** Returns s percent-encoded as one path segment. Lone surrogates are encoded as '?' (UTF-8 cannot hold them). */
    static String encode(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder(b.length + 16);
        for (byte x : b) {
            int c = x & 0xff;
            if (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(HEX[c >> 4]).append(HEX[c & 15]);
            }
        }
        return out.toString();
    }
}
