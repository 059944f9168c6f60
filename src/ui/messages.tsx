/** What a screen tells the person: an error, announced at once (role alert), and a notice (role status). */
export function Messages({
  error,
  notice,
}: {
  error?: string | undefined;
  notice?: string | undefined;
}) {
  return (
    <>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
    </>
  );
}
