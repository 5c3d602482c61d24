/** @type {import('tailwindcss').Config} */
module.exports = {
  content: ["./views/**/*.templ", "./views/**/*.go", "./static/app.js"],
  darkMode: "media",
  theme: { extend: {} },
  plugins: [require("@tailwindcss/forms")],
};
