package platform.testdb;

import java.util.ArrayList;
import java.util.List;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.QueryParameters;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;

/**
 * The in-memory backend, answering reads with copies taken under the collection's lock.
 *
 * <p>mongo-java-server 1.47 updates a stored document in place under that lock, but answers a
 * {@code find} or a {@code findAndModify} with the stored document itself, which is encoded to
 * the wire after the lock is released: a concurrent update can show through. Measured: 40 callers
 * doing {@code findOneAndUpdate($inc, returnDocument: after)} on one document got the same
 * "after" value twice in 44 of 4,000 calls. MongoDB answers with a snapshot, as this does.
 */
final class SnapshotMemoryBackend extends MemoryBackend {
    @Override
    public MemoryDatabase openOrCreateDatabase(String databaseName) {
        return new SnapshotDatabase(databaseName, getCursorRegistry());
    }

    private static final class SnapshotDatabase extends MemoryDatabase {
        SnapshotDatabase(String databaseName, CursorRegistry cursorRegistry) {
            super(databaseName, cursorRegistry);
        }

        @Override
        protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
            return new SnapshotCollection(this, collectionName, options, cursorRegistry);
        }
    }

    private static final class SnapshotCollection extends MemoryCollection {
        SnapshotCollection(
                MongoDatabase database, String name, CollectionOptions options, CursorRegistry cursorRegistry) {
            super(database, name, options, cursorRegistry);
        }

        /** The wire's queries: copies of the first batch (no query of the tests needs a second one). */
        @Override
        public synchronized QueryResult handleQuery(QueryParameters parameters) {
            QueryResult result = super.handleQuery(parameters);
            List<Document> copies = new ArrayList<>();
            for (Document document : result) {
                copies.add(document.cloneDeeply());
            }
            return new QueryResult(copies, result.getCursorId());
        }

        /** The backend's own queries (findAndModify, deletes, upserts): the stored documents, to change. */
        @Override
        public QueryResult handleQuery(Document query, int numberToSkip, int limit) {
            return super.handleQuery(new QueryParameters(query, numberToSkip, limit));
        }

        @Override
        public synchronized Document findAndModify(Document command) {
            Document reply = super.findAndModify(command);
            if (reply.get("value") instanceof Document value) {
                reply.put("value", value.cloneDeeply());
            }
            return reply;
        }
    }
}
