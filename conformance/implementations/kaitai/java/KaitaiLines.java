// One JVM for a whole conformance session: reads "MODE<TAB>FILE" lines on stdin and
// answers each with exactly one JSON line from the Kaitai cross-check harness
// (tools/ksy/harness/java/Harness.java). In the default package, as the harness is.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public final class KaitaiLines {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            int tab = line.indexOf('\t');
            if (tab < 0) {
                System.out.println("{\"error\":\"expected MODE<TAB>FILE\"}");
            } else {
                try {
                    Harness.main(new String[] {line.substring(0, tab), line.substring(tab + 1)});
                } catch (Throwable error) {
                    // The harness catches exceptions itself; this is an Error (out of memory, stack).
                    System.out.println("{\"error\":\"" + error.getClass().getSimpleName() + "\"}");
                }
            }
            System.out.flush();
        }
    }
}
