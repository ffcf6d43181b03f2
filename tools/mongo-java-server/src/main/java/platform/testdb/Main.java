package platform.testdb;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;

/**
 * Serves mongo-java-server's in-memory backend on 127.0.0.1 (see {@link SnapshotMemoryBackend}).
 *
 * <p>Usage: {@code java -jar mongo-java-server-runner.jar [port]} (0 or none: any free port). Prints
 * {@code listening on <port>} once it accepts connections, and exits when its standard input closes,
 * so a test run that dies never leaves the server behind.
 */
public final class Main {
    /**
     * The version the server reports. mongo-java-server's own choices top out at wire version 8,
     * and the Node.js driver 7 refuses servers below wire version 9 (MongoDB 4.4).
     */
    private static final MongoVersion REPORTED_VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(4, 4, 0);
        }

        @Override
        public int getWireVersion() {
            return 9;
        }
    };

    private Main() {}

    public static void main(String[] args) throws IOException {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        MongoServer server = new MongoServer(new SnapshotMemoryBackend().version(REPORTED_VERSION));
        server.bind("127.0.0.1", port);
        System.out.println("listening on " + server.getLocalAddress().getPort());
        System.out.flush();

        InputStream stdin = System.in;
        while (stdin.read() != -1) {
            // Input is ignored; only its end matters.
        }
        server.shutdownNow();
        System.exit(0);
    }
}
