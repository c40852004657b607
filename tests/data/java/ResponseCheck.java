// Reads our encoded error responses with Kafka's own client classes, as the Java client
// does on receipt (NetworkClient.parseResponse): one line in, "<api> <version> <result>"
// out. In: "<api key> <version> <correlation id> <hex of the response, size excluded>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.TreeMap;
import org.apache.kafka.clients.NetworkClient;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestHeader;

public class ResponseCheck {
    public static void main(String[] args) throws Exception {
        Method parse = NetworkClient.class.getMethod("parseResponse", ByteBuffer.class, RequestHeader.class);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split(" ");
            ApiKeys api = ApiKeys.forId(Integer.parseInt(f[0]));
            short version = Short.parseShort(f[1]);
            if (version < api.oldestVersion() || version > api.latestVersion(true)) {
                System.out.println(api.id + " " + version + " unsupported");
                continue;
            }
            byte[] bytes = new byte[f[3].length() / 2];
            for (int i = 0; i < bytes.length; i++)
                bytes[i] = (byte) Integer.parseInt(f[3].substring(2 * i, 2 * i + 2), 16);
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            RequestHeader header = new RequestHeader(api, version, "check", Integer.parseInt(f[2]));
            try {
                AbstractResponse r = (AbstractResponse) parse.invoke(null, buffer, header);
                String rest = buffer.remaining() == 0 ? "" : " trailing=" + buffer.remaining();
                System.out.println(api.id + " " + version + " " + new TreeMap<>(r.errorCounts()) + rest);
            } catch (Exception e) {
                Throwable c = e.getCause() != null ? e.getCause() : e;
                System.out.println(api.id + " " + version + " failed " + c);
            }
        }
    }
}
