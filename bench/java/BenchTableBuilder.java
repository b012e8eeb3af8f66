/*
 * Builds a metadata-only Iceberg v2 benchmark table in the Hadoop (filesystem) layout.
 *
 * Compiled and started by bench/tables.py; see that module and bench/README.md.
 *
 * The table looks like taxi trips and is partitioned by day(pickup_ts), bucket[16](id). No data
 * file is written: every data file is a manifest entry with a fake path and full column metrics
 * (sizes, value/null/NaN counts, lower/upper bounds, encoded by Iceberg itself).
 *
 * Layout, chosen so that filters prune the way PERFORMANCE.md describes:
 *   - files are numbered f = 0 .. N-1 in time order; file f belongs to group g = f / 16 and to
 *     bucket b = f % 16 (one file per bucket and group);
 *   - group g holds the ids [g * ID_SPAN, (g + 1) * ID_SPAN); the file of bucket b has as
 *     bounds the smallest and the largest id of that range whose Iceberg bucket is b, so ids
 *     grow with time, a narrow id range inside one group leaves exactly 16 files, and
 *     bucket(id) partition values agree with the bounds;
 *   - the groups are spread evenly over DAYS days (group g on day g * DAYS / groups) and each
 *     group gets its own slice of its day for the pickup_ts bounds;
 *   - manifests take consecutive files, so each holds files of neighbouring days.
 *
 * Output: progress on stderr; one JSON object on the last line of stdout.
 */

import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.BucketUtil;

public final class BenchTableBuilder {
  static final int BUCKETS = 16;
  static final long ID_SPAN = 1L << 14;
  static final long DAY_MICROS = 86_400_000_000L;

  static final int ID = 1;
  static final int PICKUP_TS = 2;
  static final int VENDOR = 3;
  static final int ZONE = 4;
  static final int FARE = 5;
  static final int TIP = 6;
  static final int PASSENGERS = 7;
  static final int PAYMENT = 8;

  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.optional(ID, "id", Types.LongType.get()),
          Types.NestedField.optional(PICKUP_TS, "pickup_ts", Types.TimestampType.withZone()),
          Types.NestedField.optional(VENDOR, "vendor", Types.IntegerType.get()),
          Types.NestedField.optional(ZONE, "zone", Types.StringType.get()),
          Types.NestedField.optional(FARE, "fare", Types.DoubleType.get()),
          Types.NestedField.optional(TIP, "tip", Types.DoubleType.get()),
          Types.NestedField.optional(PASSENGERS, "passengers", Types.IntegerType.get()),
          Types.NestedField.optional(PAYMENT, "payment", Types.StringType.get()));

  /** Sorted, so that zones[i] <= zones[j] whenever i <= j. */
  static final String[] ZONES = {
    "Astoria", "Bronx Park", "Chelsea", "East Village", "Flatiron", "Harlem", "JFK Airport",
    "LaGuardia", "Midtown", "SoHo", "Tribeca", "Upper West Side"
  };

  private final Map<String, String> args;
  private final long files;
  private final int filesPerManifest;
  private final int snapshots;
  private final long groups;
  private final int days;
  private final long startDay;
  private final String runId = UUID.randomUUID().toString();
  private final AtomicLong written = new AtomicLong();

  private BenchTableBuilder(Map<String, String> args) {
    this.args = args;
    this.files = Long.parseLong(required("files"));
    this.filesPerManifest = Integer.parseInt(required("files-per-manifest"));
    this.snapshots = Integer.parseInt(args.getOrDefault("snapshots", "1"));
    this.groups = (files + BUCKETS - 1) / BUCKETS;
    this.days = (int) Math.min(Long.parseLong(args.getOrDefault("days", "1000")), groups);
    this.startDay = LocalDate.parse(args.getOrDefault("start-date", "2021-01-01")).toEpochDay();
    if (files < 1 || filesPerManifest < 1 || snapshots < 1 || days < 1) {
      throw new IllegalArgumentException("files, files-per-manifest, snapshots, days must be >= 1");
    }
    if (snapshots > files) {
      throw new IllegalArgumentException("cannot spread " + files + " files over " + snapshots
          + " snapshots");
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

  /** A partition tuple (day, bucket), copied by DataFiles.Builder. */
  static final class Partition implements StructLike {
    private final Object[] values;

    Partition(int day, int bucket) {
      this.values = new Object[] {day, bucket};
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

  static int bucketOf(long id) {
    return (BucketUtil.hash(id) & Integer.MAX_VALUE) % BUCKETS;
  }

  /** Day (index from the first day) of group g. */
  long dayOfGroup(long g) {
    return g * days / groups;
  }

  /** First group of day d: the smallest g with g * days / groups >= d. */
  long firstGroupOfDay(long d) {
    return (d * groups + days - 1) / days;
  }

  static ByteBuffer bound(Type type, Object value) {
    return Conversions.toByteBuffer(type, value);
  }

  DataFile dataFile(PartitionSpec spec, String location, long f) {
    long g = f / BUCKETS;
    int b = (int) (f % BUCKETS);

    // ids: the smallest and largest id of the group's range that fall in bucket b.
    long idLow = g * ID_SPAN;
    long idHigh = (g + 1) * ID_SPAN - 1;
    while (bucketOf(idLow) != b) {
      idLow++;
    }
    while (bucketOf(idHigh) != b) {
      idHigh--;
    }

    // pickup_ts: the group's slice of its day.
    long d = dayOfGroup(g);
    long first = firstGroupOfDay(d);
    long count = firstGroupOfDay(d + 1) - first;
    long slice = g - first;
    long dayStart = (startDay + d) * DAY_MICROS;
    long tsLow = dayStart + slice * DAY_MICROS / count;
    long tsHigh = Math.max(tsLow, dayStart + (slice + 1) * DAY_MICROS / count - 1);

    // A deterministic spread of the other values, from the file number.
    long mix = (f * 0x9E3779B97F4A7C15L) >>> 33;
    long rows = 900 + mix % 250;
    int zoneLow = (int) (mix % 6);
    int zoneHigh = zoneLow + 3 + (int) (mix % 3);
    long zoneNulls = mix % 5;
    long tipNulls = mix % 13;
    long passengerNulls = mix % 7;
    long tipNans = (mix % 11 == 0) ? 1 : 0;

    Map<Integer, Long> sizes = new HashMap<>();
    sizes.put(ID, rows * 4 + 40);
    sizes.put(PICKUP_TS, rows * 5 + 40);
    sizes.put(VENDOR, rows / 4 + 30);
    sizes.put(ZONE, rows + 120);
    sizes.put(FARE, rows * 6 + 40);
    sizes.put(TIP, rows * 5 + 40);
    sizes.put(PASSENGERS, rows / 3 + 30);
    sizes.put(PAYMENT, rows / 2 + 60);
    long fileSize = 1_200;
    for (long size : sizes.values()) {
      fileSize += size;
    }

    Map<Integer, Long> valueCounts = new HashMap<>();
    Map<Integer, Long> nullCounts = new HashMap<>();
    for (int id = ID; id <= PAYMENT; id++) {
      valueCounts.put(id, rows);
      nullCounts.put(id, 0L);
    }
    nullCounts.put(ZONE, zoneNulls);
    nullCounts.put(TIP, tipNulls);
    nullCounts.put(PASSENGERS, passengerNulls);

    Map<Integer, Long> nanCounts = new HashMap<>();
    nanCounts.put(FARE, 0L);
    nanCounts.put(TIP, tipNans);

    Map<Integer, ByteBuffer> lower = new HashMap<>();
    Map<Integer, ByteBuffer> upper = new HashMap<>();
    lower.put(ID, bound(Types.LongType.get(), idLow));
    upper.put(ID, bound(Types.LongType.get(), idHigh));
    lower.put(PICKUP_TS, bound(Types.TimestampType.withZone(), tsLow));
    upper.put(PICKUP_TS, bound(Types.TimestampType.withZone(), tsHigh));
    lower.put(VENDOR, bound(Types.IntegerType.get(), 1));
    upper.put(VENDOR, bound(Types.IntegerType.get(), 2 + (int) (mix % 3)));
    lower.put(ZONE, bound(Types.StringType.get(), ZONES[zoneLow]));
    upper.put(ZONE, bound(Types.StringType.get(), ZONES[zoneHigh]));
    lower.put(FARE, bound(Types.DoubleType.get(), 2.5 + (mix % 7) * 0.5));
    upper.put(FARE, bound(Types.DoubleType.get(), 40.0 + (mix % 97) + 0.25));
    lower.put(TIP, bound(Types.DoubleType.get(), 0.0));
    upper.put(TIP, bound(Types.DoubleType.get(), 5.0 + (mix % 23) + 0.5));
    lower.put(PASSENGERS, bound(Types.IntegerType.get(), 1));
    upper.put(PASSENGERS, bound(Types.IntegerType.get(), 2 + (int) (mix % 5)));
    lower.put(PAYMENT, bound(Types.StringType.get(), "card"));
    upper.put(PAYMENT, bound(Types.StringType.get(), (mix % 4 == 0) ? "dispute" : "credit"));

    Metrics metrics =
        new Metrics(rows, sizes, valueCounts, nullCounts, nanCounts, lower, upper);
    int day = (int) (startDay + d);
    String path =
        String.format(
            Locale.ROOT,
            "%s/data/pickup_ts_day=%s/id_bucket=%d/%05d-%d-%s-%05d.parquet",
            location,
            LocalDate.ofEpochDay(day),
            b,
            b,
            f / filesPerManifest,
            runId,
            f);
    return DataFiles.builder(spec)
        .withPath(path)
        .withFormat(FileFormat.PARQUET)
        .withPartition(new Partition(day, b))
        .withFileSizeInBytes(fileSize)
        .withMetrics(metrics)
        .withSplitOffsets(Arrays.asList(4L))
        .withSortOrder(SortOrder.unsorted())
        .build();
  }

  /** Writes one manifest holding files [from, to). */
  ManifestFile writeManifest(Table table, int index, long from, long to) throws Exception {
    String path =
        String.format(Locale.ROOT, "%s/metadata/%s-m%d.avro", table.location(), runId, index);
    OutputFile out = table.io().newOutputFile(path);
    ManifestWriter<DataFile> writer = ManifestFiles.write(2, table.spec(), out, null);
    try {
      for (long f = from; f < to; f++) {
        writer.add(dataFile(table.spec(), table.location(), f));
      }
    } finally {
      writer.close();
    }
    long done = written.addAndGet(to - from);
    long step = Math.max(files / 20, 1);
    if (done / step != (done - (to - from)) / step || done == files) {
      log(String.format(Locale.ROOT, "wrote %,d of %,d file entries", done, files));
    }
    return writer.toManifestFile();
  }

  void run() throws Exception {
    String warehouse = required("warehouse");
    String namespace = args.getOrDefault("namespace", "bench");
    String name = required("name");
    int threads = Integer.parseInt(args.getOrDefault("threads", "2"));

    HadoopCatalog catalog = new HadoopCatalog(new Configuration(), warehouse);
    TableIdentifier ident = TableIdentifier.of(namespace, name);
    PartitionSpec spec =
        PartitionSpec.builderFor(SCHEMA).day("pickup_ts").bucket("id", BUCKETS).build();
    Map<String, String> props = new HashMap<>();
    props.put(TableProperties.FORMAT_VERSION, "2");
    props.put(TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
    props.put(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "100");
    props.put("icecore.bench", "metadata-only; data files do not exist");
    Table table = catalog.buildTable(ident, SCHEMA).withPartitionSpec(spec)
        .withProperties(props).create();
    log("created " + ident + " at " + table.location());

    // Snapshot s appends files [snapStart(s), snapStart(s + 1)), in manifests of at most
    // filesPerManifest consecutive files.
    List<long[]> ranges = new ArrayList<>();
    List<Integer> firstManifest = new ArrayList<>();
    for (int s = 0; s < snapshots; s++) {
      long from = files * s / snapshots;
      long to = files * (s + 1) / snapshots;
      firstManifest.add(ranges.size());
      for (long m = from; m < to; m += filesPerManifest) {
        ranges.add(new long[] {m, Math.min(to, m + filesPerManifest)});
      }
    }
    firstManifest.add(ranges.size());
    log(String.format(Locale.ROOT, "%,d files, %,d manifests, %,d snapshots, %d days",
        files, ranges.size(), snapshots, days));

    long t0 = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(threads, 1));
    List<Future<ManifestFile>> futures = new ArrayList<>();
    try {
      for (int i = 0; i < ranges.size(); i++) {
        final int index = i;
        final long[] range = ranges.get(i);
        futures.add(pool.submit(() -> writeManifest(table, index, range[0], range[1])));
      }
      List<ManifestFile> manifests = new ArrayList<>();
      for (Future<ManifestFile> future : futures) {
        manifests.add(future.get());
      }
      double writeSeconds = (System.nanoTime() - t0) / 1e9;
      log(String.format(Locale.ROOT, "manifests written in %.1f s", writeSeconds));

      long t1 = System.nanoTime();
      long step = Math.max(snapshots / 10, 1);
      for (int s = 0; s < snapshots; s++) {
        AppendFiles append = table.newFastAppend();
        for (int i = firstManifest.get(s); i < firstManifest.get(s + 1); i++) {
          append.appendManifest(manifests.get(i));
        }
        append.commit();
        if ((s + 1) % step == 0 || s + 1 == snapshots) {
          log(String.format(Locale.ROOT, "committed %,d of %,d snapshots", s + 1, snapshots));
        }
      }
      double commitSeconds = (System.nanoTime() - t1) / 1e9;
      table.refresh();
      String metadata =
          ((HasTableOperations) table).operations().current().metadataFileLocation();
      System.out.println(
          String.format(
              Locale.ROOT,
              "{\"table\": \"%s\", \"metadata\": \"%s\", \"files\": %d, \"manifests\": %d, "
                  + "\"snapshots\": %d, \"snapshot_id\": %d, \"days\": %d, "
                  + "\"write_seconds\": %.3f, \"commit_seconds\": %.3f}",
              table.location(),
              metadata,
              files,
              ranges.size(),
              snapshots,
              table.currentSnapshot().snapshotId(),
              days,
              writeSeconds,
              commitSeconds));
      System.out.flush();
    } finally {
      pool.shutdownNow();
    }
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
    new BenchTableBuilder(parse(argv)).run();
  }
}
