/*
 * Iceberg Java's side of bench/plan_bench.py: load a table from its metadata file, plan a scan
 * with planFiles() and consume every task inside the JVM.
 *
 * Compiled by bench/tables.py's compile_builder and called through py4j: one py4j call per
 * plan, because a million per-task calls from Python (tens of microseconds each) would measure
 * py4j, not Iceberg. Every task is consumed the way a reader consumes it: the data file's
 * location, record count and size, the delete files that apply, the residual filter. The sums
 * are returned so the bench can check that every tool planned (and read) the same files.
 */

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;

public final class PlanConsumer {
  /** The tasks of the last hold() call, kept reachable so the JVM's peak includes them. */
  private static List<FileScanTask> held = new ArrayList<>();

  private PlanConsumer() {}

  /** The table behind one metadata file, read-only (no catalog involved). */
  public static Table load(String metadataFile) {
    HadoopFileIO io = new HadoopFileIO(new Configuration());
    return new BaseTable(new StaticTableOperations(metadataFile, io), metadataFile);
  }

  /**
   * Plans a new scan of the table with the filter and consumes every task.
   *
   * @return files, sum of record counts, sum of file sizes, delete files applied, tasks whose
   *     residual is not "true", sum of path lengths
   */
  public static long[] consume(Table table, Expression filter) throws IOException {
    long files = 0;
    long records = 0;
    long bytes = 0;
    long deletes = 0;
    long residuals = 0;
    long pathChars = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
      for (FileScanTask task : tasks) {
        DataFile file = task.file();
        pathChars += file.location().length();
        records += file.recordCount();
        bytes += file.fileSizeInBytes();
        deletes += task.deletes().size();
        if (task.residual().op() != Expression.Operation.TRUE) {
          residuals += 1;
        }
        files += 1;
      }
    }
    return new long[] {files, records, bytes, deletes, residuals, pathChars};
  }

  /** Plans the scan again and keeps every task in a list (until the next call). */
  public static int hold(Table table, Expression filter) throws IOException {
    held = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
      for (FileScanTask task : tasks) {
        held.add(task);
      }
    }
    return held.size();
  }
}
