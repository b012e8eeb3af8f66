/*
 * Builds the app's metadata-only Iceberg v2 bench tables whose shape is not "many files":
 * a long history ("snapshots") and an evolved table ("evolved"), in the Hadoop layout.
 *
 * Compiled and started by bench/tables.py (--kind snapshots|evolved); see bench/README.md.
 * BenchTableBuilder.java builds the many-files tables and lays out its files the same way.
 *
 * snapshots: the taxi schema of BenchTableBuilder, partitioned by day(pickup_ts),
 *   bucket[16](id). S snapshots committed K at a time in one Transaction each (one metadata
 *   file per K snapshots, so the metadata log is long but the build does not write S metadata
 *   files): mostly merge appends (newAppend, manifest merging on, so manifest lists stay
 *   short) of 1-3 files, a few overwrites (newOverwrite: replace a file), deletes (newDelete:
 *   a whole file) and row deltas (position and equality delete files), five branches (one,
 *   "dev", with its own appends) and twenty tags, some on old snapshots.
 * evolved: a taxi-like table taken through 50 schemas (add, rename, widen, drop, nested
 *   columns) and 5 partition specs (identity, day, hour, month, year, bucket, truncate), with
 *   files appended under every spec.
 *
 * Reproducible: every choice comes from java.util.Random(seed) and the file numbers, and every
 * timestamp is fixed: after each commit the new metadata file's snapshot, snapshot-log and
 * last-updated times are rewritten to start + sequence-number * interval (minus a seeded jitter
 * under half an interval) before the next commit reads it back, so the metadata log and the
 * snapshot log carry the same fixed times. Snapshot ids and file UUIDs are Iceberg's own
 * (random). No data or delete file exists: the paths are fake.
 *
 * Output: progress on stderr; one JSON object on the last line of stdout.
 */

import java.io.File;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.nio.ByteBuffer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.transforms.Transform;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.BucketUtil;
import org.apache.iceberg.util.JsonUtil;

public final class BenchShapeBuilder {
  static final long DAY_MICROS = 86_400_000_000L;
  static final int BUCKETS = 16;
  static final String[] ZONES = {
    "Astoria", "Bronx Park", "Chelsea", "East Village", "Flatiron", "Harlem", "JFK Airport",
    "LaGuardia", "Midtown", "SoHo", "Tribeca", "Upper West Side"
  };
  static final String[] BRANCHES = {"audit", "backfill", "dev", "release-2025-06", "experiment"};

  static final Schema TAXI =
      new Schema(
          Types.NestedField.optional(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "pickup_ts", Types.TimestampType.withZone()),
          Types.NestedField.optional(3, "vendor", Types.IntegerType.get()),
          Types.NestedField.optional(4, "zone", Types.StringType.get()),
          Types.NestedField.optional(5, "fare", Types.DoubleType.get()),
          Types.NestedField.optional(6, "tip", Types.DoubleType.get()),
          Types.NestedField.optional(7, "passengers", Types.IntegerType.get()),
          Types.NestedField.optional(8, "payment", Types.StringType.get()));

  /** The evolved table's first schema: narrow types, so that later schemas can widen them. */
  static final Schema EVOLVED_START =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "ts", Types.TimestampType.withZone()),
          Types.NestedField.optional(3, "vendor", Types.IntegerType.get()),
          Types.NestedField.optional(4, "zone", Types.StringType.get()),
          Types.NestedField.optional(5, "fare", Types.FloatType.get()),
          Types.NestedField.optional(6, "tip", Types.FloatType.get()),
          Types.NestedField.optional(7, "passengers", Types.IntegerType.get()),
          Types.NestedField.optional(8, "amount", Types.DecimalType.of(9, 2)),
          Types.NestedField.optional(9, "payment", Types.StringType.get()));

  private final Map<String, String> args;
  private final long seed;
  private final long startMillis;
  private final long intervalMillis;
  private final ObjectMapper mapper = JsonUtil.mapper();
  private int version = 0;
  private double retimeSeconds = 0;

  private BenchShapeBuilder(Map<String, String> args) {
    this.args = args;
    this.seed = Long.parseLong(args.getOrDefault("seed", "20"));
    this.startMillis =
        LocalDate.parse(args.getOrDefault("start-date", "2025-06-01"))
            .atStartOfDay(ZoneOffset.UTC)
            .toInstant()
            .toEpochMilli();
    this.intervalMillis = 1000L * Long.parseLong(args.getOrDefault("interval-seconds", "60"));
    if (intervalMillis < 2000) {
      throw new IllegalArgumentException("--interval-seconds must be >= 2");
    }
  }

  private String required(String key) {
    String value = args.get(key);
    if (value == null) {
      throw new IllegalArgumentException("missing --" + key);
    }
    return value;
  }

  static void log(String message) {
    System.err.println("[bench-java] " + message);
    System.err.flush();
  }

  static long mix(long a, long b) {
    long x = a * 0x9E3779B97F4A7C15L + b * 0xC2B2AE3D27D4EB4FL;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    return x ^ (x >>> 29);
  }

  /** The fixed commit time of sequence number seq: one interval apart, a seeded jitter early. */
  long fakeMillis(long seq) {
    long jitter = Math.floorMod(mix(seed, seq), intervalMillis / 2);
    return startMillis + seq * intervalMillis - jitter;
  }

  /** A partition tuple of any spec, copied by the file builders. */
  static final class Partition implements StructLike {
    private final Object[] values;

    Partition(Object... values) {
      this.values = values;
    }

    @Override
    public int size() {
      return values.length;
    }

    @Override
    public <T> T get(int pos, Class<T> javaClass) {
      return javaClass.cast(values[pos]);
    }

    @Override
    public <T> void set(int pos, T value) {
      values[pos] = value;
    }
  }

  static ByteBuffer bound(Type type, Object value) {
    return Conversions.toByteBuffer(type, value);
  }

  static String local(String location) {
    return location.startsWith("file:") ? location.replaceFirst("^file:(//)?", "") : location;
  }

  /**
   * Rewrites the times of metadata file v{version}: snapshots get fakeMillis(sequence number),
   * the snapshot log follows them, last-updated-ms follows the newest. The next commit reads the
   * file back (HadoopTableOperations refreshes after a commit), so the metadata log's entry for
   * this file carries the rewritten time too.
   */
  Table retime(Table table) throws Exception {
    long t0 = System.nanoTime();
    File file =
        new File(local(table.location()), String.format(Locale.ROOT, "metadata/v%d.metadata.json",
            version));
    if (!file.isFile()) {
      throw new IllegalStateException("expected the metadata file " + file);
    }
    ObjectNode root = (ObjectNode) mapper.readTree(file);
    Map<Long, Long> times = new HashMap<>();
    long newest = fakeMillis(0);
    JsonNode snaps = root.get("snapshots");
    if (snaps != null) {
      for (JsonNode snap : snaps) {
        long seq = snap.get("sequence-number").asLong();
        long ts = fakeMillis(seq);
        ((ObjectNode) snap).put("timestamp-ms", ts);
        times.put(snap.get("snapshot-id").asLong(), ts);
        newest = Math.max(newest, ts);
      }
    }
    JsonNode snapLog = root.get("snapshot-log");
    if (snapLog != null) {
      for (JsonNode entry : snapLog) {
        ((ObjectNode) entry).put("timestamp-ms", times.get(entry.get("snapshot-id").asLong()));
      }
    }
    // After the newest snapshot (and after the previous file's time), before the next one.
    long previous = Long.MIN_VALUE;
    JsonNode metaLog = root.get("metadata-log");
    if (metaLog != null && metaLog.size() > 0) {
      previous = metaLog.get(metaLog.size() - 1).get("timestamp-ms").asLong();
    }
    root.put("last-updated-ms", Math.max(newest + 1000, previous + 1));
    mapper.writeValue(file, root);
    // Hadoop's local file system checks a sibling .crc; the rewritten file has none.
    new File(file.getParentFile(), "." + file.getName() + ".crc").delete();
    // A fresh load, so that the next commit's base (and its metadata-log entry) is this file.
    Table reloaded = catalog.loadTable(ident);
    retimeSeconds += (System.nanoTime() - t0) / 1e9;
    return reloaded;
  }

  HadoopCatalog catalog;
  TableIdentifier ident;

  /**
   * Hadoop's local file system without checksum files and without the chmod it forks for every
   * file it creates when Hadoop's native library is missing (a fork of this JVM per manifest
   * made the 10,000-snapshot build crawl). New files get the umask's mode, as chmod would set.
   */
  public static final class FastLocalFs extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) {}
  }

  HadoopCatalog catalog() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", FastLocalFs.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    catalog = new HadoopCatalog(conf, required("warehouse"));
    ident = TableIdentifier.of(args.getOrDefault("namespace", "bench"), required("name"));
    return catalog;
  }

  Map<String, String> baseProperties() {
    Map<String, String> props = new HashMap<>();
    props.put(TableProperties.FORMAT_VERSION, "2");
    props.put(TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
    props.put(
        TableProperties.METADATA_PREVIOUS_VERSIONS_MAX,
        args.getOrDefault("previous-versions-max", "1000"));
    props.put("icecore.bench", "metadata-only; data files do not exist");
    return props;
  }

  // ---------------------------------------------------------------- snapshots

  /** A taxi data file numbered f, on day `day` (from the start date), bucket f % 16. */
  DataFile taxiFile(PartitionSpec spec, String location, long f, int day) {
    int b = (int) (f % BUCKETS);
    long m = mix(seed, f) >>> 1;
    long rows = 50 + m % 950;
    long idLow = f * 1000;
    long idHigh = idLow + rows - 1;
    long dayStart = (startMillis / 86_400_000L + day) * DAY_MICROS;
    long tsLow = dayStart + (m % 3600) * 1_000_000L * 12;
    long tsHigh = Math.min(dayStart + DAY_MICROS - 1, tsLow + 600_000_000L);
    int zoneLow = (int) (m % 6);
    Map<Integer, Long> sizes = new HashMap<>();
    Map<Integer, Long> values = new HashMap<>();
    Map<Integer, Long> nulls = new HashMap<>();
    for (int id = 1; id <= 8; id++) {
      sizes.put(id, rows * (1 + id % 5) + 40);
      values.put(id, rows);
      nulls.put(id, id == 6 ? m % 13 : 0L);
    }
    Map<Integer, Long> nans = new HashMap<>();
    nans.put(5, 0L);
    nans.put(6, m % 11 == 0 ? 1L : 0L);
    Map<Integer, ByteBuffer> lower = new HashMap<>();
    Map<Integer, ByteBuffer> upper = new HashMap<>();
    lower.put(1, bound(Types.LongType.get(), idLow));
    upper.put(1, bound(Types.LongType.get(), idHigh));
    lower.put(2, bound(Types.TimestampType.withZone(), tsLow));
    upper.put(2, bound(Types.TimestampType.withZone(), tsHigh));
    lower.put(3, bound(Types.IntegerType.get(), 1));
    upper.put(3, bound(Types.IntegerType.get(), 2 + (int) (m % 3)));
    lower.put(4, bound(Types.StringType.get(), ZONES[zoneLow]));
    upper.put(4, bound(Types.StringType.get(), ZONES[zoneLow + 3 + (int) (m % 3)]));
    lower.put(5, bound(Types.DoubleType.get(), 2.5 + (m % 7) * 0.5));
    upper.put(5, bound(Types.DoubleType.get(), 40.0 + (m % 97) + 0.25));
    lower.put(6, bound(Types.DoubleType.get(), 0.0));
    upper.put(6, bound(Types.DoubleType.get(), 5.0 + (m % 23) + 0.5));
    lower.put(7, bound(Types.IntegerType.get(), 1));
    upper.put(7, bound(Types.IntegerType.get(), 2 + (int) (m % 5)));
    lower.put(8, bound(Types.StringType.get(), "card"));
    upper.put(8, bound(Types.StringType.get(), "credit"));
    long size = 1_200;
    for (long s : sizes.values()) {
      size += s;
    }
    int epochDay = (int) (startMillis / 86_400_000L + day);
    String path =
        String.format(
            Locale.ROOT,
            "%s/data/pickup_ts_day=%s/id_bucket=%d/%05d-%d-bench-%08d.parquet",
            location,
            LocalDate.ofEpochDay(epochDay),
            b,
            b,
            f / 3,
            f);
    return DataFiles.builder(spec)
        .withPath(path)
        .withFormat(FileFormat.PARQUET)
        .withPartition(new Partition(epochDay, b))
        .withFileSizeInBytes(size)
        .withMetrics(new Metrics(rows, sizes, values, nulls, nans, lower, upper))
        .withSplitOffsets(Arrays.asList(4L))
        .build();
  }

  DeleteFile deleteFileFor(PartitionSpec spec, DataFile target, long n, boolean equality) {
    String base = target.location();
    String path = base.replace(".parquet", String.format(Locale.ROOT, "-%s-%d.parquet",
        equality ? "eq-deletes" : "pos-deletes", n));
    FileMetadata.Builder builder = FileMetadata.deleteFileBuilder(spec);
    if (equality) {
      builder.ofEqualityDeletes(1);
    } else {
      builder.ofPositionDeletes().withReferencedDataFile(base);
    }
    return builder
        .withPath(path)
        .withFormat(FileFormat.PARQUET)
        .withPartition(target.partition())
        .withFileSizeInBytes(900 + n % 500)
        .withRecordCount(1 + n % 40)
        .build();
  }

  static long mainId(Table table) {
    Snapshot snap = table.currentSnapshot();
    return snap == null ? -1 : snap.snapshotId();
  }

  void buildSnapshots() throws Exception {
    String namespace = args.getOrDefault("namespace", "bench");
    String name = required("name");
    int snapshots = Integer.parseInt(required("snapshots"));
    int versions = Integer.parseInt(args.getOrDefault("metadata-versions", "1000"));
    int days = Integer.parseInt(args.getOrDefault("days", "7"));
    int tags = Integer.parseInt(args.getOrDefault("tags", "20"));
    if (snapshots < 20 || versions < 2 || days < 1) {
      throw new IllegalArgumentException("need >= 20 snapshots, >= 2 versions, >= 1 day");
    }
    int perVersion = (snapshots + versions - 2) / (versions - 1);
    Random rng = new Random(seed);

    Map<String, String> props = baseProperties();
    props.put(TableProperties.MANIFEST_MERGE_ENABLED, "true");
    props.put(TableProperties.MANIFEST_TARGET_SIZE_BYTES, String.valueOf(2L << 20));
    props.put(TableProperties.MANIFEST_MIN_MERGE_COUNT, "50");
    PartitionSpec spec =
        PartitionSpec.builderFor(TAXI).day("pickup_ts").bucket("id", BUCKETS).build();
    Table table = catalog().buildTable(TableIdentifier.of(namespace, name), TAXI)
        .withPartitionSpec(spec).withProperties(props).create();
    version = 1;
    table = retime(table);
    String location = table.location();
    log(String.format(Locale.ROOT, "created %s.%s at %s: %,d snapshots, %d per metadata file",
        namespace, name, location, snapshots, perVersion));

    // Where branches and tags are made (as positions in the main history), fixed in advance.
    Map<Integer, String> branchAt = new HashMap<>();
    for (int i = 0; i < BRANCHES.length; i++) {
      branchAt.put((int) ((long) snapshots * (2 * i + 1) / (2 * BRANCHES.length + 1)), BRANCHES[i]);
    }
    Map<Integer, Integer> tagAt = new HashMap<>();
    for (int i = 0; i < tags; i++) {
      tagAt.put((int) ((long) snapshots * (i + 1) / (tags + 1)) + 1, i);
    }

    List<DataFile> live = new ArrayList<>();
    List<Long> mainIds = new ArrayList<>();
    long nextFile = 0;
    long nextDelete = 0;
    boolean devExists = false;
    int made = 0;
    int appends = 0, overwrites = 0, deletes = 0, rowDeltas = 0, devCommits = 0;
    int branches = 0, tagsMade = 0;
    long t0 = System.nanoTime();
    long step = Math.max(snapshots / 10, 1);
    while (made < snapshots) {
      Transaction txn = table.newTransaction();
      for (int k = 0; k < perVersion && made < snapshots; k++, made++) {
        int day = (int) ((long) made * days / snapshots);
        int roll = rng.nextInt(1000);
        if (devExists && roll < 20) {
          txn.newAppend().appendFile(taxiFile(spec, location, nextFile++, day)).toBranch("dev")
              .commit();
          devCommits++;
          continue;
        }
        if (roll < 950 || live.size() < 50) {
          var append = txn.newAppend();
          int count = 1 + rng.nextInt(3);
          for (int c = 0; c < count; c++) {
            DataFile file = taxiFile(spec, location, nextFile++, day);
            append.appendFile(file);
            live.add(file);
          }
          append.commit();
          appends++;
        } else if (roll < 965) {
          int at = rng.nextInt(live.size());
          DataFile old = live.get(at);
          DataFile replacement = taxiFile(spec, location, nextFile++, day);
          live.set(at, replacement);
          txn.newOverwrite().deleteFile(old).addFile(replacement).commit();
          overwrites++;
        } else if (roll < 975) {
          int at = rng.nextInt(live.size());
          DataFile old = live.get(at);
          live.set(at, live.get(live.size() - 1));
          live.remove(live.size() - 1);
          txn.newDelete().deleteFile(old).commit();
          deletes++;
        } else {
          DataFile target = live.get(rng.nextInt(live.size()));
          txn.newRowDelta().addDeletes(deleteFileFor(spec, target, nextDelete++, roll % 3 == 0))
              .commit();
          rowDeltas++;
        }
        mainIds.add(mainId(txn.table()));
        int pos = mainIds.size();
        String branch = branchAt.remove(pos);
        if (branch != null) {
          // Most branches start at the current snapshot, one at an old one.
          long at = branch.equals("backfill") ? mainIds.get(pos / 3) : mainIds.get(pos - 1);
          txn.manageSnapshots().createBranch(branch, at).commit();
          devExists |= branch.equals("dev");
          branches++;
        }
        Integer tag = tagAt.remove(pos);
        if (tag != null) {
          // Every third tag marks an old snapshot (a release tagged late).
          int back = tag % 3 == 2 ? rng.nextInt(pos) : pos - 1;
          txn.manageSnapshots()
              .createTag(String.format(Locale.ROOT, "v1.%d", tag), mainIds.get(back))
              .commit();
          tagsMade++;
        }
      }
      txn.commitTransaction();
      version++;
      table = retime(table);
      if (made % step < perVersion || made == snapshots) {
        log(String.format(Locale.ROOT, "committed %,d of %,d snapshots (%d metadata files)",
            made, snapshots, version));
      }
    }
    double commitSeconds = (System.nanoTime() - t0) / 1e9;
    table.refresh();
    report(table, String.format(Locale.ROOT,
        "\"data_files\": %d, \"appends\": %d, \"overwrites\": %d, \"deletes\": %d, "
            + "\"row_deltas\": %d, \"dev_commits\": %d, \"branches\": %d, \"tags\": %d, "
            + "\"metadata_versions\": %d, \"commit_seconds\": %.3f, \"retime_seconds\": %.3f",
        live.size(), appends, overwrites, deletes, rowDeltas, devCommits, branches, tagsMade,
        version, commitSeconds, retimeSeconds));
  }

  // ---------------------------------------------------------------- evolved

  /** One row's worth of values the partition transforms read, by source field id. */
  static Object sourceValue(int fieldId, long f, long tsMicros) {
    switch (fieldId) {
      case 1:
        return f * 1000;
      case 2:
        return tsMicros;
      case 3:
        return (int) (1 + f % 4);
      case 4:
        return ZONES[(int) (f % ZONES.length)];
      default:
        throw new IllegalArgumentException("no source value for field " + fieldId);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes", "deprecation"})
  DataFile evolvedFile(Table table, long f, long tsMicros) {
    PartitionSpec spec = table.spec();
    Schema schema = table.schema();
    Object[] values = new Object[spec.fields().size()];
    StringBuilder dir = new StringBuilder();
    for (int i = 0; i < values.length; i++) {
      PartitionField field = spec.fields().get(i);
      Type type = schema.findType(field.sourceId());
      Transform transform = field.transform();
      values[i] = transform.bind(type).apply(sourceValue(field.sourceId(), f, tsMicros));
      dir.append(field.name()).append('=').append(values[i]).append('/');
    }
    long rows = 100 + (mix(seed, f) >>> 1) % 5000;
    Map<Integer, Long> counts = new HashMap<>();
    Map<Integer, Long> nulls = new HashMap<>();
    for (Types.NestedField col : schema.columns()) {
      if (col.type().isPrimitiveType()) {
        counts.put(col.fieldId(), rows);
        nulls.put(col.fieldId(), col.isRequired() ? 0L : (f + col.fieldId()) % 7);
      }
    }
    Map<Integer, ByteBuffer> lower = new HashMap<>();
    Map<Integer, ByteBuffer> upper = new HashMap<>();
    lower.put(1, bound(Types.LongType.get(), f * 1000));
    upper.put(1, bound(Types.LongType.get(), f * 1000 + rows - 1));
    lower.put(2, bound(Types.TimestampType.withZone(), tsMicros));
    upper.put(2, bound(Types.TimestampType.withZone(), tsMicros + 3_000_000L));
    return DataFiles.builder(spec)
        .withPath(String.format(Locale.ROOT, "%s/data/%sspec%d-%08d.parquet", table.location(),
            dir, spec.specId(), f))
        .withFormat(FileFormat.PARQUET)
        .withPartition(new Partition(values))
        .withFileSizeInBytes(rows * 48 + 4096)
        .withMetrics(new Metrics(rows, null, counts, nulls, null, lower, upper))
        .build();
  }

  /** Schema change number j (1-based) of the evolved table; returns what it did. */
  String evolveSchema(Table table, int j, List<String> added, List<String> widenable) {
    UpdateSchema update = table.updateSchema();
    String did;
    switch (j % 6) {
      case 1:
        {
          String col = "attr_" + j;
          Type type;
          switch ((j / 6) % 5) {
            case 0: type = Types.IntegerType.get(); widenable.add(col); break;
            case 1: type = Types.StringType.get(); break;
            case 2: type = Types.DateType.get(); break;
            case 3:
              type = Types.StructType.of(
                  Types.NestedField.optional(1000 + 2 * j, "lat", Types.DoubleType.get()),
                  Types.NestedField.optional(1001 + 2 * j, "lon", Types.DoubleType.get()));
              break;
            default: type = Types.ListType.ofOptional(1000 + 2 * j, Types.StringType.get());
          }
          update.addColumn(col, type, "added by schema change " + j);
          added.add(col);
          did = "add " + col + " " + type;
          break;
        }
      case 2:
        {
          String col = "note_" + j;
          update.addColumn(col, Types.StringType.get());
          added.add(col);
          did = "add " + col;
          break;
        }
      case 3:
        {
          String from = added.remove(added.size() - 1);
          String to = from + "_renamed";
          update.renameColumn(from, to);
          added.add(to);
          widenable.replaceAll(c -> c.equals(from) ? to : c);
          did = "rename " + from + " to " + to;
          break;
        }
      case 4:
        {
          if (widenable.isEmpty()) {
            update.updateColumnDoc("zone", "pickup zone, revision " + j);
            did = "doc zone";
            break;
          }
          String col = widenable.remove(0);
          Type type = table.schema().findType(col);
          Type wider;
          if (type instanceof Types.IntegerType) {
            wider = Types.LongType.get();
          } else if (type instanceof Types.FloatType) {
            wider = Types.DoubleType.get();
          } else {
            wider = Types.DecimalType.of(18, ((Types.DecimalType) type).scale());
          }
          update.updateColumn(col, wider.asPrimitiveType());
          did = "widen " + col + " to " + wider;
          break;
        }
      case 5:
        {
          String col = "tmp_" + j;
          update.addColumn(col, Types.LongType.get());
          did = "add " + col;
          break;
        }
      default:
        {
          String col = "tmp_" + (j - 1);
          // With a new doc too: dropping what the last change added would otherwise bring
          // back the schema before it, and Iceberg would reuse that schema's id.
          update.deleteColumn(col).updateColumnDoc("id", "trip id, revision " + j);
          did = "drop " + col;
        }
    }
    update.commit();
    return did;
  }

  static final String[][] SPEC_STEPS = {
    // spec 1: hourly instead of daily
    {"remove p_day", "hour ts p_hour"},
    // spec 2: monthly, bucketed ids
    {"remove p_hour", "month ts p_month", "bucket id p_id_bucket"},
    // spec 3: yearly, truncated zone, no vendor
    {"remove p_month", "remove p_vendor", "year ts p_year", "truncate zone p_zone_trunc"},
    // spec 4: daily again, fewer buckets
    {"remove p_year", "remove p_id_bucket", "day ts p_day2", "bucket8 id p_id_bucket8"},
  };

  void evolveSpec(Table table, int step) {
    var update = table.updateSpec();
    for (String op : SPEC_STEPS[step]) {
      String[] p = op.split(" ");
      switch (p[0]) {
        case "remove": update.removeField(p[1]); break;
        case "hour": update.addField(p[2], Expressions.hour(p[1])); break;
        case "day": update.addField(p[2], Expressions.day(p[1])); break;
        case "month": update.addField(p[2], Expressions.month(p[1])); break;
        case "year": update.addField(p[2], Expressions.year(p[1])); break;
        case "bucket": update.addField(p[2], Expressions.bucket(p[1], 16)); break;
        case "bucket8": update.addField(p[2], Expressions.bucket(p[1], 8)); break;
        case "truncate": update.addField(p[2], Expressions.truncate(p[1], 4)); break;
        default: throw new IllegalStateException(op);
      }
    }
    update.commit();
  }

  void buildEvolved() throws Exception {
    String namespace = args.getOrDefault("namespace", "bench");
    String name = required("name");
    int schemas = Integer.parseInt(args.getOrDefault("schemas", "50"));
    int specs = Integer.parseInt(args.getOrDefault("specs", "5"));
    long files = Long.parseLong(args.getOrDefault("files", "5000"));
    if (schemas < 2 || specs < 1 || specs > SPEC_STEPS.length + 1 || files < schemas) {
      throw new IllegalArgumentException("need >= 2 schemas, 1-5 specs, files >= schemas");
    }
    PartitionSpec spec0 = PartitionSpec.builderFor(EVOLVED_START)
        .identity("vendor", "p_vendor").day("ts", "p_day").build();
    Table table = catalog().buildTable(TableIdentifier.of(namespace, name), EVOLVED_START)
        .withPartitionSpec(spec0).withProperties(baseProperties()).create();
    version = 1;
    table = retime(table);
    log("created " + namespace + "." + name + " at " + table.location());

    List<String> added = new ArrayList<>();
    List<String> widenable = new ArrayList<>(List.of("fare", "tip", "amount", "passengers"));
    long nextFile = 0;
    int snapshots = 0;
    int specsMade = 1;
    long startDay = startMillis / 86_400_000L;
    long t0 = System.nanoTime();
    for (int j = 1; j < schemas; j++) {
      // Files under the current schema and spec: one fast append (one manifest).
      long batch = files * j / (schemas - 1) - files * (j - 1) / (schemas - 1);
      var append = table.newFastAppend();
      for (long i = 0; i < batch; i++, nextFile++) {
        long ts = (startDay + nextFile * 400 / files) * DAY_MICROS
            + (mix(seed, nextFile) >>> 1) % DAY_MICROS;
        append.appendFile(evolvedFile(table, nextFile, ts));
      }
      append.commit();
      version++;
      table = retime(table);
      snapshots++;
      String did = evolveSchema(table, j, added, widenable);
      version++;
      table = retime(table);
      // Spec changes after every schemas/specs schema changes, so files follow each spec.
      int wantSpecs = Math.min(specs, 1 + (int) ((long) j * specs / schemas));
      if (wantSpecs > specsMade) {
        evolveSpec(table, specsMade - 1);
        specsMade++;
        version++;
        table = retime(table);
        did += "; spec " + table.spec().specId() + " " + table.spec();
      }
      log("schema " + table.schema().schemaId() + ": " + did.replace('\n', ' '));
    }
    table.refresh();
    report(table, String.format(Locale.ROOT,
        "\"data_files\": %d, \"schemas\": %d, \"specs\": %d, \"metadata_versions\": %d, "
            + "\"commit_seconds\": %.3f, \"retime_seconds\": %.3f",
        nextFile, table.schemas().size(), table.specs().size(), version,
        (System.nanoTime() - t0) / 1e9, retimeSeconds));
  }

  void report(Table table, String extra) {
    int count = 0;
    for (Snapshot ignored : table.snapshots()) {
      count++;
    }
    String metadata = ((HasTableOperations) table).operations().current().metadataFileLocation();
    System.out.println(String.format(Locale.ROOT,
        "{\"table\": \"%s\", \"metadata\": \"%s\", \"snapshots\": %d, \"snapshot_id\": %d, "
            + "\"refs\": %d, %s}",
        table.location(), metadata, count, mainId(table), table.refs().size(), extra));
    System.out.flush();
  }

  static Map<String, String> parse(String[] argv) {
    Map<String, String> parsed = new HashMap<>();
    for (int i = 0; i < argv.length; i += 2) {
      if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
        throw new IllegalArgumentException("expected --key value pairs, got " + argv[i]);
      }
      parsed.put(argv[i].substring(2), argv[i + 1]);
    }
    return parsed;
  }

  public static void main(String[] argv) throws Exception {
    BenchShapeBuilder builder = new BenchShapeBuilder(parse(argv));
    String kind = builder.required("kind");
    if (kind.equals("snapshots")) {
      builder.buildSnapshots();
    } else if (kind.equals("evolved")) {
      builder.buildEvolved();
    } else {
      throw new IllegalArgumentException("unknown --kind " + kind);
    }
  }
}
