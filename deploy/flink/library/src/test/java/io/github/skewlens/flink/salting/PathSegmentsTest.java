package io.github.skewlens.flink.salting;

import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PathSegmentsTest {
    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("SessionWindow", "SessionWindow"),
                Arguments.of("a1b2c3d4e5f60718293a4b5c6d7e8f90", "a1b2c3d4e5f60718293a4b5c6d7e8f90"),
                Arguments.of("unreserved-._~", "unreserved-._~"),
                Arguments.of("a/b", "a%2Fb"),
                Arguments.of("Window(TumblingEventTimeWindows(60000)) -> Sink",
                        "Window%28TumblingEventTimeWindows%2860000%29%29%20-%3E%20Sink"),
                Arguments.of("a+b", "a%2Bb"),
                Arguments.of("100%", "100%25"),
                Arguments.of("a?b#c&d=e", "a%3Fb%23c%26d%3De"),
                Arguments.of("Größe", "Gr%C3%B6%C3%9Fe"),
                Arguments.of("日本", "%E6%97%A5%E6%9C%AC"),
                Arguments.of("😀", "%F0%9F%98%80"),
                Arguments.of("", ""));
    }

    @ParameterizedTest
    @MethodSource("cases")
    void encodesOneSegment(String in, String want) {
        assertEquals(want, PathSegments.encode(in));
    }

    @Test
    void planUriJoinsBaseAndSegments() {
        assertEquals("http://h:8080/v1/salting/j1/a%2Fb%20c",
                HttpPlanPoller.planUri("http://h:8080", "j1", "a/b c").toString());
        assertEquals("https://h/skewlens/v1/salting/j1/t",
                HttpPlanPoller.planUri(" https://h/skewlens// ", "j1", "t").toString());
        // The raw path keeps %2F: the task name stays one segment on the wire.
        assertEquals("/v1/salting/j1/a%2Fb", HttpPlanPoller.planUri("http://h", "j1", "a/b").getRawPath());
    }
}
