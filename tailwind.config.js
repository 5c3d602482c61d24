/** @type {import('tailwindcss').Config} */
// brand-* is the primary colour: CSS custom properties (static/src/app.css holds the
// console's indigo; a brand's palette overrides them per page, see views/page.go).
const brand = Object.fromEntries(
  [50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 950].map((s) => [s, `rgb(var(--brand-${s}) / <alpha-value>)`]),
);
module.exports = {
  content: ["./views/**/*.templ", "./views/**/*.go", "./static/app.js"],
  darkMode: "media",
  theme: { extend: { colors: { brand } } },
  plugins: [require("@tailwindcss/forms")],
};
