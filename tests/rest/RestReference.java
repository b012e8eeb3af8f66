// The reference Iceberg REST catalog server for Icecore's client tests.
//
// Iceberg Java's own server-side logic (org.apache.iceberg.rest.CatalogHandlers, from the
// pinned Iceberg Spark runtime jar) over a JdbcCatalog in SQLite, behind JDK 17's built-in
// com.sun.net.httpserver: the routing below only maps the REST catalog OpenAPI paths to
// CatalogHandlers and exceptions to the spec's ErrorModel, as Iceberg's own test adapter
// (RESTCatalogAdapter, not shipped in the runtime jar) does.
//
// Usage: java -cp <iceberg jar>:<spark jars>/*:<sqlite jar>:<classes> RestReference
//          <catalog.db> <warehouse> <port-file> [--credential ID:SECRET] [--token-ttl S]
//          [--table-config K=V]... [--unavailable-after-commit]
// It listens on 127.0.0.1 and a free port, written to <port-file> once it serves.
//
// Test-only extras (documented, not protocol mocks): --credential turns on a minimal OAuth2
// client-credentials endpoint at /v1/oauth/tokens (tokens are random, expire after
// --token-ttl seconds) and requires its bearer token on every other call; --table-config
// adds K=V to every loadTable's "config" (how a catalog vends storage credentials);
// POST /test/fail-next-commit-after makes the next table commit apply and then answer 503
// (a reply lost after the server acted), to test CommitStateUnknown.

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.Endpoint;
import org.apache.iceberg.rest.RESTSerializers;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.CreateViewRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.OAuthTokenResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.annotation.JsonAutoDetect;
import org.apache.iceberg.shaded.com.fasterxml.jackson.annotation.PropertyAccessor;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.PropertyNamingStrategies;

public class RestReference {
  static final String PREFIX = "ref";
  static final ObjectMapper MAPPER = new ObjectMapper();
  static JdbcCatalog catalog;
  static String credential;
  static long tokenTtlSeconds = 3600;
  static final Map<String, Long> TOKENS = new ConcurrentHashMap<>();
  static final Map<String, String> TABLE_CONFIG = new LinkedHashMap<>();
  static final AtomicBoolean FAIL_NEXT_COMMIT_AFTER = new AtomicBoolean(false);

  static final class HttpError extends RuntimeException {
    final int code;

    HttpError(int code, String type, String message) {
      super(message);
      this.code = code;
      this.type = type;
    }

    final String type;
  }

  public static void main(String[] args) throws Exception {
    String db = args[0];
    String warehouse = args[1];
    Path portFile = Path.of(args[2]);
    for (int i = 3; i < args.length; i++) {
      switch (args[i]) {
        case "--credential" -> credential = args[++i];
        case "--token-ttl" -> tokenTtlSeconds = Long.parseLong(args[++i]);
        case "--table-config" -> {
          String[] kv = args[++i].split("=", 2);
          TABLE_CONFIG.put(kv[0], kv[1]);
        }
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    MAPPER.setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY);
    MAPPER.setPropertyNamingStrategy(new PropertyNamingStrategies.KebabCaseStrategy());
    MAPPER.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    RESTSerializers.registerAll(MAPPER);

    Map<String, String> props = new HashMap<>();
    props.put("uri", "jdbc:sqlite:" + db);
    props.put("warehouse", warehouse);
    props.put("jdbc.schema-version", "V1");
    catalog = new JdbcCatalog();
    catalog.setConf(new org.apache.hadoop.conf.Configuration());
    catalog.initialize("reference", props);

    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.createContext("/", RestReference::handle);
    // One thread: SQLite serializes writers anyway, and a single handler thread makes every
    // commit a clean compare-and-swap against the JdbcCatalog.
    server.setExecutor(Executors.newSingleThreadExecutor());
    server.start();
    Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
    Files.writeString(tmp, Integer.toString(server.getAddress().getPort()));
    Files.move(tmp, portFile, StandardCopyOption.ATOMIC_MOVE);
  }

  static void handle(HttpExchange ex) throws IOException {
    int code = 200;
    Object body = null;
    String raw = null;
    try {
      String method = ex.getRequestMethod();
      String path = ex.getRequestURI().getRawPath();
      Map<String, String> query = query(ex.getRequestURI().getRawQuery());
      byte[] input = readAll(ex.getRequestBody());
      if (path.equals("/v1/oauth/tokens") && method.equals("POST")) {
        raw = MAPPER.writeValueAsString(token(new String(input, StandardCharsets.UTF_8)));
      } else if (path.equals("/test/fail-next-commit-after") && method.equals("POST")) {
        FAIL_NEXT_COMMIT_AFTER.set(true);
        code = 204;
      } else {
        authorize(ex.getRequestHeaders().getFirst("Authorization"));
        Object[] result = route(method, path, query, input);
        code = (Integer) result[0];
        body = result[1];
      }
    } catch (HttpError e) {
      code = e.code;
      raw = error(e.code, e.type, e.getMessage());
    } catch (Exception e) {
      code = status(e);
      raw = error(code, e.getClass().getSimpleName(), e.getMessage());
    }
    byte[] out =
        raw != null
            ? raw.getBytes(StandardCharsets.UTF_8)
            : body != null ? MAPPER.writeValueAsBytes(body) : new byte[0];
    ex.getResponseHeaders().set("Content-Type", "application/json");
    if (code == 204 || out.length == 0) {
      ex.sendResponseHeaders(code == 200 ? 204 : code, -1);
    } else {
      ex.sendResponseHeaders(code, out.length);
      try (OutputStream os = ex.getResponseBody()) {
        os.write(out);
      }
    }
    ex.close();
  }

  static Object[] route(String method, String path, Map<String, String> query, byte[] input)
      throws IOException {
    if (path.equals("/v1/config") && method.equals("GET")) {
      List<Endpoint> endpoints =
          List.of(
              Endpoint.V1_LIST_NAMESPACES,
              Endpoint.V1_LOAD_NAMESPACE,
              Endpoint.V1_NAMESPACE_EXISTS,
              Endpoint.V1_CREATE_NAMESPACE,
              Endpoint.V1_UPDATE_NAMESPACE,
              Endpoint.V1_DELETE_NAMESPACE,
              Endpoint.V1_LIST_TABLES,
              Endpoint.V1_LOAD_TABLE,
              Endpoint.V1_TABLE_EXISTS,
              Endpoint.V1_CREATE_TABLE,
              Endpoint.V1_UPDATE_TABLE,
              Endpoint.V1_DELETE_TABLE,
              Endpoint.V1_RENAME_TABLE,
              Endpoint.V1_REPORT_METRICS,
              Endpoint.V1_LIST_VIEWS,
              Endpoint.V1_LOAD_VIEW,
              Endpoint.V1_VIEW_EXISTS,
              Endpoint.V1_CREATE_VIEW,
              Endpoint.V1_UPDATE_VIEW,
              Endpoint.V1_DELETE_VIEW,
              Endpoint.V1_RENAME_VIEW);
      ConfigResponse config =
          ConfigResponse.builder().withOverride("prefix", PREFIX).withEndpoints(endpoints).build();
      return new Object[] {200, config};
    }
    String base = "/v1/" + PREFIX + "/";
    if (!path.startsWith(base)) {
      throw new HttpError(404, "NoSuchEndpointException", "No route for " + method + " " + path);
    }
    String[] parts = path.substring(base.length()).split("/", -1);
    String pageToken = query.get("pageToken");
    String pageSize = query.get("pageSize");
    if (parts.length == 1 && parts[0].equals("namespaces")) {
      if (method.equals("GET")) {
        String parent = query.get("parent");
        Namespace ns = parent == null ? Namespace.empty() : RESTUtil.decodeNamespace(parent);
        return new Object[] {
          200,
          pageSize == null
              ? CatalogHandlers.listNamespaces(catalog, ns)
              : CatalogHandlers.listNamespaces(catalog, ns, pageToken, pageSize)
        };
      }
      if (method.equals("POST")) {
        CreateNamespaceRequest req = MAPPER.readValue(input, CreateNamespaceRequest.class);
        return new Object[] {200, CatalogHandlers.createNamespace(catalog, req)};
      }
    }
    if (parts.length == 2 && parts[0].equals("views") && parts[1].equals("rename")) {
      CatalogHandlers.renameView(catalog, MAPPER.readValue(input, RenameTableRequest.class));
      return new Object[] {204, null};
    }
    if (parts.length == 2 && parts[0].equals("tables") && parts[1].equals("rename")) {
      CatalogHandlers.renameTable(catalog, MAPPER.readValue(input, RenameTableRequest.class));
      return new Object[] {204, null};
    }
    if (parts.length >= 2 && parts[0].equals("namespaces")) {
      Namespace ns = RESTUtil.decodeNamespace(parts[1]);
      if (parts.length == 2) {
        switch (method) {
          case "GET":
            return new Object[] {200, CatalogHandlers.loadNamespace(catalog, ns)};
          case "HEAD":
            CatalogHandlers.namespaceExists(catalog, ns);
            return new Object[] {204, null};
          case "DELETE":
            CatalogHandlers.dropNamespace(catalog, ns);
            return new Object[] {204, null};
          default:
            break;
        }
      }
      if (parts.length == 3 && parts[2].equals("properties") && method.equals("POST")) {
        UpdateNamespacePropertiesRequest req =
            MAPPER.readValue(input, UpdateNamespacePropertiesRequest.class);
        return new Object[] {200, CatalogHandlers.updateNamespaceProperties(catalog, ns, req)};
      }
      if (parts.length == 3 && parts[2].equals("tables")) {
        if (method.equals("GET")) {
          return new Object[] {
            200,
            pageSize == null
                ? CatalogHandlers.listTables(catalog, ns)
                : CatalogHandlers.listTables(catalog, ns, pageToken, pageSize)
          };
        }
        if (method.equals("POST")) {
          CreateTableRequest req = MAPPER.readValue(input, CreateTableRequest.class);
          LoadTableResponse resp =
              req.stageCreate()
                  ? CatalogHandlers.stageTableCreate(catalog, ns, req)
                  : CatalogHandlers.createTable(catalog, ns, req);
          return new Object[] {200, withConfig(resp)};
        }
      }
      if (parts.length == 3 && parts[2].equals("views")) {
        if (method.equals("GET")) {
          return new Object[] {200, CatalogHandlers.listViews(catalog, ns)};
        }
        if (method.equals("POST")) {
          CreateViewRequest req = MAPPER.readValue(input, CreateViewRequest.class);
          return new Object[] {200, CatalogHandlers.createView(catalog, ns, req)};
        }
      }
      if (parts.length == 4 && parts[2].equals("views")) {
        TableIdentifier ident = TableIdentifier.of(ns, URLDecoder.decode(parts[3], "UTF-8"));
        switch (method) {
          case "GET":
            return new Object[] {200, CatalogHandlers.loadView(catalog, ident)};
          case "HEAD":
            CatalogHandlers.viewExists(catalog, ident);
            return new Object[] {204, null};
          case "DELETE":
            CatalogHandlers.dropView(catalog, ident);
            return new Object[] {204, null};
          case "POST":
            UpdateTableRequest req = MAPPER.readValue(input, UpdateTableRequest.class);
            return new Object[] {200, CatalogHandlers.updateView(catalog, ident, req)};
          default:
            break;
        }
      }
      if (parts.length >= 4 && parts[2].equals("tables")) {
        TableIdentifier ident = TableIdentifier.of(ns, URLDecoder.decode(parts[3], "UTF-8"));
        if (parts.length == 5 && parts[4].equals("metrics") && method.equals("POST")) {
          return new Object[] {204, null};
        }
        if (parts.length == 4) {
          switch (method) {
            case "GET":
              return new Object[] {200, withConfig(CatalogHandlers.loadTable(catalog, ident))};
            case "HEAD":
              CatalogHandlers.tableExists(catalog, ident);
              return new Object[] {204, null};
            case "DELETE":
              if ("true".equals(query.get("purgeRequested"))) {
                CatalogHandlers.purgeTable(catalog, ident);
              } else {
                CatalogHandlers.dropTable(catalog, ident);
              }
              return new Object[] {204, null};
            case "POST":
              UpdateTableRequest req = MAPPER.readValue(input, UpdateTableRequest.class);
              LoadTableResponse resp = CatalogHandlers.updateTable(catalog, ident, req);
              if (FAIL_NEXT_COMMIT_AFTER.getAndSet(false)) {
                throw new HttpError(
                    503, "ServiceUnavailableException", "Reply lost after the commit applied");
              }
              return new Object[] {200, withConfig(resp)};
            default:
              break;
          }
        }
      }
    }
    throw new HttpError(404, "NoSuchEndpointException", "No route for " + method + " " + path);
  }

  static LoadTableResponse withConfig(LoadTableResponse resp) {
    if (TABLE_CONFIG.isEmpty()) {
      return resp;
    }
    return LoadTableResponse.builder()
        .withTableMetadata(resp.tableMetadata())
        .addAllConfig(resp.config())
        .addAllConfig(TABLE_CONFIG)
        .build();
  }

  static OAuthTokenResponse token(String form) {
    Map<String, String> params = RESTUtil.decodeFormData(form);
    if (credential == null) {
      throw new HttpError(400, "invalid_request", "This server does not issue tokens");
    }
    String expected = credential;
    String given = params.get("client_id") + ":" + params.get("client_secret");
    if (!"client_credentials".equals(params.get("grant_type")) || !expected.equals(given)) {
      throw new HttpError(401, "invalid_client", "Unknown client or wrong secret");
    }
    String token = UUID.randomUUID().toString();
    TOKENS.put(token, System.currentTimeMillis() + tokenTtlSeconds * 1000);
    return OAuthTokenResponse.builder()
        .withToken(token)
        .withTokenType("bearer")
        .withIssuedTokenType("urn:ietf:params:oauth:token-type:access_token")
        .setExpirationInSeconds((int) tokenTtlSeconds)
        .build();
  }

  static void authorize(String header) {
    if (credential == null) {
      return;
    }
    if (header == null || !header.startsWith("Bearer ")) {
      throw new HttpError(401, "NotAuthorizedException", "Bearer token required");
    }
    Long expires = TOKENS.get(header.substring("Bearer ".length()));
    if (expires == null || expires < System.currentTimeMillis()) {
      throw new HttpError(401, "NotAuthorizedException", "Token unknown or expired");
    }
  }

  static int status(Exception e) {
    if (e instanceof NoSuchNamespaceException
        || e instanceof NoSuchTableException
        || e instanceof NoSuchViewException) {
      return 404;
    }
    if (e instanceof AlreadyExistsException
        || e instanceof CommitFailedException
        || e instanceof NamespaceNotEmptyException) {
      return 409;
    }
    if (e instanceof IllegalArgumentException
        || e instanceof ValidationException
        || e instanceof BadRequestException
        || e instanceof IOException) {
      return 400;
    }
    if (e instanceof NotAuthorizedException) {
      return 401;
    }
    if (e instanceof ForbiddenException) {
      return 403;
    }
    if (e instanceof UnsupportedOperationException) {
      return 406;
    }
    if (e instanceof CommitStateUnknownException) {
      return 500;
    }
    return 500;
  }

  static String error(int code, String type, String message) {
    ErrorResponse err =
        ErrorResponse.builder()
            .responseCode(code)
            .withType(type)
            .withMessage(message == null ? type : message)
            .build();
    return ErrorResponseParser.toJson(err);
  }

  static Map<String, String> query(String raw) {
    Map<String, String> out = new HashMap<>();
    if (raw == null || raw.isEmpty()) {
      return out;
    }
    for (String pair : raw.split("&")) {
      String[] kv = pair.split("=", 2);
      // Namespaces stay encoded (RESTUtil.decodeNamespace decodes them); others are decoded.
      String key = URLDecoder.decode(kv[0], StandardCharsets.UTF_8);
      String value = kv.length > 1 ? kv[1] : "";
      out.put(key, key.equals("parent") ? value : URLDecoder.decode(value, StandardCharsets.UTF_8));
    }
    return out;
  }

  static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    in.transferTo(buf);
    return buf.toByteArray();
  }
}
